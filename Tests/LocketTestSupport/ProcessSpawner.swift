import Foundation
import LocketSystem

#if canImport(Glibc)
import Glibc
#endif

/// Where a child's stdin, stdout or stderr goes (`Spawner.Stream`, the one
/// spawner locket itself uses).
public typealias ChildStream = Spawner.Stream

/// How the tests start a process (issue 12): locket's own `Spawner`, with
/// every signal's default handling (the test runner ignores SIGPIPE; the
/// child must not inherit that), exact argv and environment (bytes, which
/// need not be UTF-8), and a lock that keeps one test thread's pipes out of
/// another's children. `Spawn.run` (run to completion), `BackgroundProcess`
/// (running, with pipes) and `ReliabilityChild` (running, into files, to be
/// killed) are built on it.
public enum ProcessSpawner {
    /// Held from creating a child's pipes until it is spawned, so that a
    /// child spawned by another thread never inherits them (its copy would
    /// hide end-of-file). Recursive: callers making pipes hold it around `spawn`.
    public static let lock = NSRecursiveLock()

    /// Starts `executable` with argv `[executable] + arguments`; the pid, or
    /// the error posix_spawn returned.
    public static func spawn(_ executable: String, _ arguments: [[UInt8]], environmentEntries: [[UInt8]],
                             stdin: ChildStream, stdout: ChildStream, stderr: ChildStream) -> Result<pid_t, Errno> {
        lock.lock()
        defer { lock.unlock() }
        return Spawner.spawn(executable, argv: [Array(executable.utf8)] + arguments, environment: environmentEntries,
                             stdin: stdin, stdout: stdout, stderr: stderr, signals: .all)
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
