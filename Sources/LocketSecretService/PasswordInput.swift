import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

/// Where a prompt reads a password from without blocking the provider: an
/// askpass program (LOCKET_ASKPASS, else SSH_ASKPASS), whose stdout the
/// loop polls, or the provider's terminal (/dev/tty, echo off, a line at a
/// time). Neither: the prompt completes as dismissed at once.
final class PasswordInput {
    enum Source {
        case askpass(pid: pid_t)
        case terminal(saved: termios)
    }

    let fd: Int32
    private var source: Source?
    private var buffer: [UInt8] = []
    /// The longest password read (as the command line's prompts take).
    static let capacity = 4096

    private init(fd: Int32, source: Source) {
        self.fd = fd
        self.source = source
    }

    deinit {
        cancel()
        wipe(&buffer)
    }

    /// Starts asking with `text`; nil when there is no way to ask.
    static func start(_ text: String, environment: Environment) -> PasswordInput? {
        for name in ["LOCKET_ASKPASS", "SSH_ASKPASS"] {
            if let program = (try? environment[name]) ?? nil, !program.isEmpty { return askpass(program, text) }
        }
        return terminal(text)
    }

    private static func askpass(_ program: String, _ text: String) -> PasswordInput? {
        var pipe: [Int32] = [-1, -1]
        guard locket_pipe_cloexec(&pipe) == 0 else { return nil }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(program), strdup(text), nil]
        defer { argv.forEach { free($0) } }
        // A process group of its own: cancelling stops whatever it started
        // too (a `sleep` left behind would hold our stderr open).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for sig in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD] { sigaddset(&defaults, sig) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, program, &actions, &attributes, argv, environ)
        close(pipe[1])
        guard rc == 0 else {
            close(pipe[0])
            return nil
        }
        _ = fcntl(pipe[0], F_SETFL, fcntl(pipe[0], F_GETFL) | O_NONBLOCK)
        return PasswordInput(fd: pipe[0], source: .askpass(pid: pid))
    }

    private static func terminal(_ text: String) -> PasswordInput? {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        var saved = termios()
        guard tcgetattr(fd, &saved) == 0 else {
            close(fd)
            return nil
        }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO | ECHONL)
        quiet.c_lflag |= tcflag_t(ICANON)
        _ = tcsetattr(fd, TCSAFLUSH, &quiet)
        let line = "\n" + text + ": "
        _ = line.withCString { write(fd, $0, strlen($0)) }
        return PasswordInput(fd: fd, source: .terminal(saved: saved))
    }

    /// Reads what is there. Returns nil while more is to come, `.some(nil)`
    /// when the user cancelled (askpass failed, end of input), else the password.
    func read() -> SecureBytes?? {
        var chunk = [UInt8](repeating: 0, count: 512)
        defer { wipe(&chunk) }
        while true {
            let n = Glibc.read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return nil }
            if n <= 0 { return .some(finish(complete: false)) }
            buffer.append(contentsOf: chunk[..<n])
            if buffer.count > PasswordInput.capacity { return .some(finish(complete: false)) }
            if case .terminal = source, let newline = buffer.firstIndex(where: { $0 == 10 || $0 == 13 }) {
                buffer.removeSubrange(newline...)
                return .some(finish(complete: true))
            }
        }
    }

    /// Ends the input: an askpass that exited 0 gave its output (less one
    /// trailing newline); anything else is a cancel.
    private func finish(complete: Bool) -> SecureBytes? {
        var ok = complete
        switch source {
        case .askpass(let pid)?:
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            ok = status == 0
            if buffer.last == 10 { buffer.removeLast() }
            if buffer.last == 13 { buffer.removeLast() }
        case .terminal(var saved)?:
            _ = tcsetattr(fd, TCSAFLUSH, &saved)
            _ = write(fd, "\n", 1)
        case nil:
            ok = false
        }
        source = nil
        close(fd)
        defer { wipe(&buffer); buffer = [] }
        guard ok else { return nil }
        return try? SecureBytes(copying: buffer)
    }

    /// Stops asking: the askpass child is killed and reaped, the terminal restored.
    func cancel() {
        switch source {
        case .askpass(let pid)?:
            kill(-pid, SIGTERM)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            close(fd)
        case .terminal(var saved)?:
            _ = tcsetattr(fd, TCSAFLUSH, &saved)
            _ = write(fd, "\n", 1)
            close(fd)
        case nil:
            return
        }
        source = nil
    }
}
