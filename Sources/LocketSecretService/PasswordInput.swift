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
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(program), strdup(text), nil]
        defer { argv.forEach { free($0) } }
        // A process group of its own: cancelling stops whatever it started
        // too (a `sleep` left behind would hold our stderr open).
        let spawned = Spawner.spawn(program, argv: argv, environment: environ, stdin: .devNull, stdout: .descriptor(pipe[1]),
                                    searchPath: true, alsoDefault: [SIGCHLD], newProcessGroup: true)
        close(pipe[1])
        guard case .success(let pid) = spawned else {
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
            let got = valueOrErrno("read") { Glibc.read(fd, &chunk, chunk.count) }
            if let failure = got.error, failure.code == EAGAIN || failure.code == EWOULDBLOCK { return nil }
            guard case .success(let n) = got, n > 0 else { return .some(finish(complete: false)) }
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
            ok = ((try? Spawner.wait(pid).get().status) ?? 0) == 0
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
            Spawner.stop(pid, group: true)
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
