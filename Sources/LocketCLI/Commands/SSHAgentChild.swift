import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

/// `locket ssh-agent -- COMMAND [ARG]...`: COMMAND runs with SSH_AUTH_SOCK
/// naming the agent's socket while the agent serves; when it exits the agent
/// stops and exits with its status. Signals another process sends locket go
/// on to COMMAND, as with `exec` (a terminal's reach it through its process
/// group already); it is COMMAND's exit that stops the agent.
enum AgentChild {
    /// The signals passed on to COMMAND, as `exec` passes them.
    static let forwardedSignals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH]

    /// Runs COMMAND and serves until it exits. `signals` is a signalfd of
    /// `forwardedSignals` and SIGCHLD, held since before the socket existed.
    static func run(_ command: [String], socket: AgentSocket, server: AgentServer, signals: Int32, _ context: Context) throws -> Int32 {
        // The agent's own SSH_AGENT_PID is not set: stopping the agent alone
        // (`ssh-agent -k`) would leave COMMAND without it, and another agent's
        // pid beside this socket would be wrong.
        let inherited = context.io.environment.all.filter { $0.name != Array("SSH_AUTH_SOCK".utf8) && $0.name != Array("SSH_AGENT_PID".utf8) }
        let environment = EnvironmentBlock(plain: inherited + [Environment.Variable(name: Array("SSH_AUTH_SOCK".utf8), value: Array(socket.path.utf8))],
                                           secrets: [])
        defer { environment.wipe() }
        let argv = CStringArray(command)
        defer { argv.free() }
        context.out.flush()
        let pid: pid_t
        switch Spawner.spawn(command[0], argv: argv.pointers, environment: environment.pointers, searchPath: true) {
        case .success(let child): pid = child
        case .failure(let error): return Commands.execFailure(command[0], context, error)
        }
        // Private keys pass through this process from now on; COMMAND keeps its own core-dump limit.
        Diagnostics.protectProcess()
        var status: Int32 = 0
        var exited = false
        do {
            try server.serve(watching: [signals]) { fd in
                var sent: Int32 = 0
                while case let signal = locket_signalfd_next(fd, &sent), signal != 0 {
                    // Until COMMAND is reaped its pid can't be reused, so this reaches COMMAND.
                    if signal != SIGCHLD && sent != 0 && !exited { kill(pid, signal) }
                }
                if !exited, case .success(let ended) = Spawner.wait(pid, options: WNOHANG), ended.pid == pid {
                    status = ended.status
                    exited = true
                }
                return exited
            }
        } catch {
            // Without its agent COMMAND would fail later and less clearly.
            if !exited {
                kill(pid, SIGTERM)
                _ = Spawner.wait(pid)
            }
            throw error
        }
        let signalled = status & 0x7f
        return signalled == 0 ? (status >> 8) & 0xff : 128 + signalled
    }
}
