import LocketSystem

#if canImport(Glibc)
import Glibc
#endif

/// The read ends of a child's stdout and stderr pipes (non-blocking) and
/// what has come out of each: the read step `Spawn.run` and
/// `BackgroundProcess` share.
struct OutputPipes {
    var outFD: Int32
    var errFD: Int32
    var stdout: [UInt8] = []
    var stderr: [UInt8] = []

    init(outFD: Int32, errFD: Int32) {
        self.outFD = outFD
        self.errFD = errFD
    }

    /// Whether either pipe may still bring output.
    var isOpen: Bool { outFD >= 0 || errFD >= 0 }

    /// A poll entry for each pipe still open.
    var pollEntries: [pollfd] {
        [outFD, errFD].filter { $0 >= 0 }.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    }

    /// Appends what `fd` (one of the two) has ready to its output; closes it
    /// at its end or on an error other than EAGAIN.
    mutating func read(_ fd: Int32, _ buffer: inout [UInt8]) {
        let r = buffer.withUnsafeMutableBytes { raw in valueOrErrno("read") { Glibc.read(fd, raw.baseAddress, raw.count) } }
        if case .success(let n) = r, n > 0 {
            if fd == outFD { stdout += buffer[0..<n] } else { stderr += buffer[0..<n] }
        } else if r.error?.code != EAGAIN {
            closeOne(fd)
        }
    }

    /// Closes `fd` (one of the two) and forgets it.
    mutating func closeOne(_ fd: Int32) {
        guard fd >= 0 else { return }
        close(fd)
        if fd == outFD { outFD = -1 } else if fd == errFD { errFD = -1 }
    }

    /// Closes both.
    mutating func closeAll() {
        closeOne(outFD)
        closeOne(errFD)
    }
}
