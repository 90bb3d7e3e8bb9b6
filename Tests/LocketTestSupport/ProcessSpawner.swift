import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where a child's stdin, stdout or stderr goes.
public enum ChildStream {
    /// `/dev/null`.
    case devNull
    /// This file: read for stdin; created (0600) or truncated for output.
    case file(String)
    /// This descriptor of the test process (a pipe's end), dup2'd.
    case descriptor(Int32)
}

/// The one place the tests start a process (issue 12): posix_spawn with an
/// exact argv and environment (bytes, which need not be UTF-8), default
/// signal dispositions and an empty signal mask (the test runner ignores
/// SIGPIPE; the child must not inherit that), and the three standard streams.
/// `Spawn.run` (run to completion), `BackgroundProcess` (running, with pipes)
/// and `ReliabilityChild` (running, into files, to be killed) are built on it.
public enum ProcessSpawner {
    /// Held from creating a child's pipes until it is spawned, so that a
    /// child spawned by another thread never inherits them (its copy would
    /// hide end-of-file). Recursive: callers making pipes hold it around `spawn`.
    public static let lock = NSRecursiveLock()

    /// Starts `executable` with argv `[executable] + arguments`; the pid, or
    /// the error posix_spawn returned.
    public static func spawn(_ executable: String, _ arguments: [[UInt8]], environmentEntries: [[UInt8]],
                             stdin: ChildStream, stdout: ChildStream, stderr: ChildStream) -> Result<pid_t, POSIXError> {
        lock.lock()
        defer { lock.unlock() }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .devNull:
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, fd, path, fd == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            case .descriptor(let source):
                posix_spawn_file_actions_adddup2(&actions, source, fd)
            }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        func cString(_ bytes: [UInt8]) -> UnsafeMutablePointer<CChar> {
            let p = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            for (i, b) in bytes.enumerated() { p[i] = CChar(bitPattern: b) }
            p[bytes.count] = 0
            return p
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([Array(executable.utf8)] + arguments).map(cString) + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environmentEntries.map(cString) + [nil]
        defer {
            for p in argv { p?.deallocate() }
            for p in envp { p?.deallocate() }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard rc == 0 else { return .failure(POSIXError(POSIXErrorCode(rawValue: rc) ?? .EIO)) }
        return .success(pid)
    }

    /// `NAME=VALUE` entries of `environment`, sorted by name.
    public static func entries(_ environment: [String: String]) -> [[UInt8]] {
        environment.sorted { $0.key < $1.key }.map { Array("\($0.key)=\($0.value)".utf8) }
    }

    /// A pipe whose ends close on exec (a child gets only the dup2'd copies).
    public static func makePipe(_ fds: inout [Int32]) -> Bool {
        guard pipe(&fds) == 0 else { return false }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return true
    }
}
