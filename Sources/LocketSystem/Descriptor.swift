import Glibc

/// Writes all of `bytes` to `fd`, again after a partial write or EINTR; the
/// errno of another failure (EPIPE: the reader is gone).
@discardableResult
public func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Void, Errno> {
    var offset = 0
    while offset < bytes.count {
        switch valueOrErrno("write", { write(fd, bytes.baseAddress! + offset, bytes.count - offset) }) {
        case .success(let n): offset += n
        case .failure(let failure): return .failure(failure)
        }
    }
    return .success(())
}

/// Writes all of an array to `fd`; see `writeAll(_:_:)` for raw memory.
@discardableResult
public func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Result<Void, Errno> {
    bytes.withUnsafeBytes { writeAll(fd, $0) }
}

/// Reads into `buffer` until it is full or the input ends, again after a
/// short read or EINTR: the count read (less than the buffer at end of file),
/// or the errno of a failure.
public func readFully(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
    var done = 0
    while done < buffer.count {
        switch valueOrErrno("read", { read(fd, buffer.baseAddress! + done, buffer.count - done) }) {
        case .success(0): return .success(done)
        case .success(let n): done += n
        case .failure(let failure): return .failure(failure)
        }
    }
    return .success(done)
}
