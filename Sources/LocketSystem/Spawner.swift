import Glibc

/// The one way locket, its PostgreSQL helper's client and the tests start a
/// process: posix_spawn (no shell, no fork of a large process), the three
/// standard streams chosen, and the child's signals reset so that it starts
/// as if from a shell. Before, `exec`, gpg and the helper each built their
/// own file actions and attributes, and the tests had a third copy.
public enum Spawner {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable, Equatable {
        /// This process's own descriptor, as it is.
        case inherit
        /// `/dev/null`: end of file for stdin, discarded for output.
        case devNull
        /// This descriptor of this process (a pipe's or socket's end), dup2'd.
        case descriptor(Int32)
        /// This file: read for stdin; created with `mode` or truncated for output.
        case file(String, mode: mode_t = 0o600)
    }

    /// Which signals the child gets default handling of.
    public enum Signals: Sendable {
        /// Those locket changes for itself (SIGPIPE and SIGXFSZ ignored, handlers for
        /// SIGINT, SIGTERM, SIGHUP, SIGQUIT); whatever locket's own parent set
        /// for the others (a `nohup`) reaches the child unchanged.
        case changedByLocket
        /// Every signal: a test runner ignores SIGPIPE and more, and what it
        /// starts must behave as from a shell whatever it inherited.
        case all
    }

    /// Starts `path` (looked up in PATH's directories with `searchPath`, as
    /// execvp does) with `argv` and `environment`, NULL-terminated arrays of
    /// C strings, and an empty signal mask. `alsoDefault`: more signals the
    /// child gets default handling of (SIGCHLD for a program that waits for
    /// children of its own, whatever it inherited). `newProcessGroup`: the
    /// child leads a group of its own, so that killing the group stops what
    /// it started too. The child's pid, or the error posix_spawn returned.
    /// The corresponding C function is `posix_spawn`.
    public static func spawn(_ path: String, argv: UnsafePointer<UnsafeMutablePointer<CChar>?>,
                             environment: UnsafePointer<UnsafeMutablePointer<CChar>?>,
                             stdin: Stream = .inherit, stdout: Stream = .inherit, stderr: Stream = .inherit,
                             searchPath: Bool = false, signals: Signals = .changedByLocket, alsoDefault: [Int32] = [],
                             newProcessGroup: Bool = false) -> Result<pid_t, Errno> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .inherit:
                break
            case .devNull:
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
            case .descriptor(let source):
                posix_spawn_file_actions_adddup2(&actions, source, fd)
            case .file(let file, let mode):
                posix_spawn_file_actions_addopen(&actions, fd, file, fd == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, mode)
            }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        switch signals {
        case .changedByLocket:
            sigemptyset(&defaults)
            for sig in [SIGPIPE, SIGXFSZ, SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&defaults, sig) }
        case .all:
            sigfillset(&defaults)
        }
        for sig in alsoDefault { sigaddset(&defaults, sig) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        var flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
        if newProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))
        #if DEBUG
        if let hook = systemCallFailureTestHook, let code = hook("posix_spawn") { return .failure(Errno(code)) }
        #endif
        var pid: pid_t = 0
        let rc = searchPath ? posix_spawnp(&pid, path, &actions, &attributes, argv, environment)
                            : posix_spawn(&pid, path, &actions, &attributes, argv, environment)
        return rc == 0 ? .success(pid) : .failure(Errno(rc))
    }

    /// `spawn` with argv (argv[0] included) and the `NAME=VALUE` entries of
    /// the environment given as bytes, which need not be UTF-8; copied into C
    /// strings for the call and freed after it.
    public static func spawn(_ path: String, argv arguments: [[UInt8]], environment: [[UInt8]],
                             stdin: Stream = .inherit, stdout: Stream = .inherit, stderr: Stream = .inherit,
                             searchPath: Bool = false, signals: Signals = .changedByLocket, alsoDefault: [Int32] = [],
                             newProcessGroup: Bool = false) -> Result<pid_t, Errno> {
        let argv = cStrings(arguments)
        let envp = cStrings(environment)
        defer { for p in argv + envp { p?.deallocate() } }
        return spawn(path, argv: argv, environment: envp, stdin: stdin, stdout: stdout, stderr: stderr,
                     searchPath: searchPath, signals: signals, alsoDefault: alsoDefault, newProcessGroup: newProcessGroup)
    }

    /// Waits for `pid` to change state (`options`: WNOHANG and the like);
    /// again after EINTR. Its pid (0 with WNOHANG while it runs) and raw
    /// wait status. The corresponding C function is `waitpid`.
    public static func wait(_ pid: pid_t, options: Int32 = 0) -> Result<(pid: pid_t, status: Int32), Errno> {
        var status: Int32 = 0
        return valueOrErrno("waitpid") { waitpid(pid, &status, options) }.map { ($0, status) }
    }

    /// Waits for `pid` to end: its exit status, or 128+N when signal N
    /// ended it (as a shell reports it); 0 when it can't be waited for (not a child).
    public static func exitStatus(_ pid: pid_t) -> Int32 {
        shellStatus((try? wait(pid).get().status) ?? 0)
    }

    /// Sends `signal` to `pid` (with `group`, to the process group it leads)
    /// and waits for it to end; its raw wait status (0 when it can't be waited for).
    @discardableResult
    public static func stop(_ pid: pid_t, signal: Int32 = SIGTERM, group: Bool = false) -> Int32 {
        kill(group ? -pid : pid, signal)
        return (try? wait(pid).get().status) ?? 0
    }

    /// A raw wait status as a shell reports it: the exit status, or 128+N for signal N.
    public static func shellStatus(_ status: Int32) -> Int32 {
        let signalled = status & 0x7f
        return signalled == 0 ? (status >> 8) & 0xff : 128 + signalled
    }

    /// NUL-terminated copies of `strings` and a final NULL, as execve wants them.
    private static func cStrings(_ strings: [[UInt8]]) -> [UnsafeMutablePointer<CChar>?] {
        strings.map { bytes in
            let p = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            for (i, b) in bytes.enumerated() { p[i] = CChar(bitPattern: b) }
            p[bytes.count] = 0
            return p
        } + [nil]
    }
}
