import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

/// `locket ssh-agent` (SPEC §13): the SSH agent protocol over the keys an
/// `AgentKeySource` gives, asked afresh for every request.
///
/// Three ways to run, as OpenSSH's ssh-agent has them:
/// - `-- COMMAND [ARG]...`: COMMAND runs with SSH_AUTH_SOCK set; the agent
///   stops when it exits and exits with its status (the way for CI);
/// - no COMMAND: the agent detaches, as `ssh-agent` does, once the socket
///   is listening, and prints the variables for `eval "$(locket ssh-agent -s)"`;
///   `kill $SSH_AGENT_PID` stops it;
/// - `-D`: the same in the foreground.
/// A refused request is one line on the agent's stderr. A detached agent
/// keeps its stderr only when it is a terminal: one that held a pipe open
/// would keep whoever reads it (a CI runner, `subprocess.run`) waiting for
/// its end; `-- COMMAND` and `-D` keep it always.
public enum SSHAgentCommand {
    /// The command's entry for the command table, with keys from `source`.
    static func spec(source: @escaping @Sendable (Context) throws -> any AgentKeySource) -> CommandSpec {
        CommandSpec(name: "ssh-agent", usage: "[-a SOCKET] [-s | -c] [-D] [-- COMMAND [ARG]...]",
                    summary: "serve the keychain's SSH keys to ssh, ssh-keygen -Y and git",
                    options: [
                        OptionSpec("socket", "a", .value("SOCKET"), completion: .file,
                                   "listen at SOCKET, which must not exist (default: a new private directory in $XDG_RUNTIME_DIR if it is yours alone, else /dev/shm)"),
                        OptionSpec("sh", "s", .flag, "print Bourne shell commands (the default unless $SHELL ends in csh)"),
                        OptionSpec("csh", "c", .flag, "print C shell commands"),
                        OptionSpec("foreground", "D", .flag, "stay in the foreground instead of detaching"),
                    ],
                    conflicts: [("sh", "csh")], operands: true,
                    run: { try Commands.sshAgent($0, $1, source: try source($1)) }, operandsEndOptions: true)
    }

    /// Runs `locket ssh-agent ARGUMENTS` with keys from `source` instead of
    /// the keychain (the command table's entry), for a test program. Returns the exit status.
    public static func run(_ arguments: [String], io: IO, backends: Backends, source: any AgentKeySource) -> Int32 {
        nonisolated(unsafe) let source = source
        return CLI.run(["locket", "ssh-agent"] + arguments, io: io, backends: backends, extra: spec(source: { _ in source }))
    }
}

extension Commands {
    static func sshAgent(_ invocation: Invocation, _ context: Context, source: any AgentKeySource) throws -> Int32 {
        let command = invocation.operands
        if !command.isEmpty {
            for name in ["sh", "csh", "foreground"] where invocation.has(name) {
                throw UsageError(message: "\(invocation.command.option(long: name)!.spelling) can't be used with a command", command: "ssh-agent")
            }
        }
        // A bad entitlements file stops the agent before it listens, as it stops any command before it reads.
        _ = try context.caller()
        // Signals are held from before the socket exists, and read from a
        // signalfd while serving: one arriving at any moment can't leave the
        // socket behind. With COMMAND they go on to it (as with exec), and
        // its exit (SIGCHLD) stops the agent.
        let signals = command.isEmpty ? [SIGTERM, SIGINT, SIGHUP] : AgentChild.forwardedSignals + [SIGCHLD]
        let signalFD = try valueOrErrno("signalfd") { locket_signalfd(signals, Int32(signals.count)) }
            .get { KeychainError(.io, "cannot watch for signals: \($0)") }
        defer { close(signalFD) }
        let socket: AgentSocket
        if let path = invocation.value("socket") {
            socket = try AgentSocket(path: path)
        } else {
            // $XDG_RUNTIME_DIR only when it is this user's alone: in one that others can write,
            // they could swap the socket's directory and answer ssh-add themselves.
            socket = try AgentSocket.makePrivate(under: RuntimeDirectory.privateParent(context.environment, name: "locket-agent",
                                                                                       memoryOnly: false))
        }
        defer { socket.close() }
        let report: (AgentEvent) -> Void = { context.err("locket ssh-agent: \(AgentEventText.line($0))") }
        let server = AgentServer(socket: socket, source: source, report: report)
        if !command.isEmpty { return try AgentChild.run(command, socket: socket, server: server, signals: signalFD, context) }

        let shell = try context.environment["SHELL"]
        let csh = invocation.has("csh") || (!invocation.has("sh") && shell?.hasSuffix("csh") == true)
        if !invocation.has("foreground") {
            context.out.flush()
            let pid = try valueOrErrno("fork") { fork() }.get { KeychainError(.io, "cannot start the agent in the background: \($0)") }
            if pid > 0 {
                // The child serves the socket; this process only says where it is.
                socket.leaveToChild()
                context.out.text(AgentEventText.variables(socket: socket.path, pid: pid, csh: csh))
                return 0
            }
            detach()
        } else {
            context.out.text(AgentEventText.variables(socket: socket.path, pid: getpid(), csh: csh))
            context.out.flush()
        }
        // Private keys pass through this process from now on.
        Diagnostics.protectProcess()
        // SIGTERM, SIGINT or SIGHUP: the socket and its directory go (the deferred close), exit 0.
        var sent: Int32 = 0
        try server.serve(watching: [signalFD]) { locket_signalfd_next($0, &sent) != 0 }
        return 0
    }

    /// What a daemon does once forked: a session of its own, `/` as its
    /// directory, stdin and stdout on /dev/null (so `$(...)` ends), and
    /// stderr too unless it is a terminal, where the refusals are for the user.
    private static func detach() {
        setsid()
        chdir("/")
        let null = open("/dev/null", O_RDWR)
        if null >= 0 {
            dup2(null, 0)
            dup2(null, 1)
            if isatty(2) == 0 { dup2(null, 2) }
            if null > 2 { close(null) }
        }
    }
}
