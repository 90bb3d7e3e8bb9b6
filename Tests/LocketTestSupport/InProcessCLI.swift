import Foundation
import LocketCLI
import LocketCLIBackends
import LocketCore
import LocketSupport
import LocketSystem

#if canImport(Glibc)
import Glibc
#endif

/// Runs the whole command line in this process through `CLI.run` and the
/// injectable `IO`, as SwiftFormat's tests run `CLI.run(in:with:)` (issue 12):
/// the same parser, commands and messages as the binary, without a process
/// start. stdout and stderr are captured in memory; stdin is a real file
/// descriptor (a pipe or /dev/null), since locket polls and reads it.
///
/// What needs a real process stays end to end (`Spawn`): exit statuses of the
/// process itself, signals, exec, terminals, argv or environment bytes that
/// are not UTF-8, file modes made under the binary's own umask, concurrency
/// between processes.
public enum InProcessCLI {
    /// How long an implicit read of stdin waits in-process: the binary's 10 s
    /// (`IO.standard`) would make a test of the silent pipe wait that long.
    public static let implicitStdinWait: Int32 = 200

    /// Runs `locket ARGUMENTS` with `environment`, `input` on stdin, the
    /// shortened implicit-stdin wait and, unless given, libsodium's minimum
    /// Argon2id cost for `init` and `passwd` without `--kdf`; on `time` (a
    /// `VirtualClock`'s) when given, else on the system's clock.
    public static func run(_ arguments: [String], environment: [String: String], input: Input = .devNull,
                           implicitStdinWait: Int32 = InProcessCLI.implicitStdinWait,
                           defaultKDF: KDFCost? = .weakForTests, time: TimeSource? = nil) -> RunResult {
        _ = Spawn.ignoreSIGPIPE
        let started = Date()
        let capture = Capture()
        var stdinFD: Int32 = -1
        var writer: Thread?
        var silentWriteEnd: Int32 = -1
        switch input {
        case .devNull:
            stdinFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
        case .silentPipe:
            var fds: [Int32] = [-1, -1]
            precondition(makePipe(&fds))
            stdinFD = fds[0]
            silentWriteEnd = fds[1]
        case .bytes(let bytes):
            var fds: [Int32] = [-1, -1]
            precondition(makePipe(&fds))
            stdinFD = fds[0]
            let writeEnd = fds[1]
            // What fits in the pipe is in it before the command starts: the
            // command's implicit wait for stdin (200 ms here) must never race
            // a writer thread a loaded machine has not scheduled yet.
            let written = writeWhatFits(writeEnd, bytes)
            if written == bytes.count {
                close(writeEnd)
            } else {
                // A thread for the rest, so that more than a pipe's 64 KiB never blocks the command reading it.
                let rest = Array(bytes[written...])
                let thread = Thread {
                    // A command that stops reading ends this with EPIPE.
                    _ = writeAll(writeEnd, rest)
                    close(writeEnd)
                }
                thread.start()
                writer = thread
            }
        }
        var io = IO(write: { fd, bytes in capture.append(fd, bytes) }, stdin: stdinFD, environment: environment)
        io.implicitStdinWait = implicitStdinWait
        io.defaultKDF = defaultKDF
        if let time { io.environment.time = time }
        let status = CLI.run(["locket"] + arguments, io: io, backends: .all)
        // The command may stop reading early: closing the read end ends the writer with EPIPE.
        close(stdinFD)
        if silentWriteEnd >= 0 { close(silentWriteEnd) }
        while let thread = writer, !thread.isFinished { usleep(1_000) }
        return RunResult(status: status, signal: nil, stdout: capture.stdout, stderr: capture.stderr, timedOut: false,
                         duration: Date().timeIntervalSince(started), arguments: arguments)
    }

    /// Writes the start of `bytes` that the pipe takes without blocking; the count written.
    private static func writeWhatFits(_ fd: Int32, _ bytes: [UInt8]) -> Int {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(fd, F_SETFL, flags) }
        var written = 0
        while written < bytes.count {
            let wrote = bytes.withUnsafeBytes { raw in
                valueOrErrno("write") { write(fd, raw.baseAddress! + written, raw.count - written) }
            }
            guard case .success(let n) = wrote, n > 0 else { break }
            written += n
        }
        return written
    }

    /// A pipe whose ends close on exec: a child the command or another test spawns must not keep it open.
    private static func makePipe(_ fds: inout [Int32]) -> Bool {
        guard pipe(&fds) == 0 else { return false }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return true
    }

    /// stdout and stderr as the command wrote them.
    private final class Capture: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var stdout: [UInt8] = []
        private(set) var stderr: [UInt8] = []

        func append(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
            lock.lock()
            defer { lock.unlock() }
            if fd == 2 { stderr += bytes } else { stdout += bytes }
        }
    }
}
