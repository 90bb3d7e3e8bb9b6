import CLocketSystem
import Glibc
import LocketCore

/// `locket ssh-agent -- COMMAND [ARG]...`: COMMAND runs with SSH_AUTH_SOCK
/// naming the agent's socket while the agent serves; when it exits the agent
/// stops and exits with its status. Signals sent to locket go on to COMMAND,
/// as with `exec`; it is COMMAND's exit that stops the agent.
enum AgentChild {
    static func run(_ command: [String], socket: AgentSocket, server: AgentServer, _ context: Context) throws -> Int32 {
        // SIGCHLD is held from before the spawn, so the exit can't be missed.
        let signals = [SIGCHLD]
        let fd = locket_signalfd(signals, Int32(signals.count))
        guard fd >= 0 else { throw KeychainError(.io, "cannot watch for the command's exit: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
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
        switch Spawn.start(command[0], argv: argv, environment: environment.pointers, stdin: .inherit, stdout: -1, stderr: -1) {
        case .success(let child): pid = child
        case .failure(let error):
            context.err("locket: error: cannot run \(command[0]): \(String(cString: strerror(error.code)))")
            return error.code == ENOENT ? 127 : 126
        }
        // Private keys pass through this process from now on; COMMAND keeps its own core-dump limit.
        Diagnostics.protectProcess()
        locket_forward_signals(pid)
        defer { locket_forward_signals(0) }
        var status: Int32 = 0
        do {
            try server.serve(watching: [fd]) { fd in
                while locket_signalfd_next(fd) != 0 {}
                return waitpid(pid, &status, WNOHANG) == pid
            }
        } catch {
            // Without its agent COMMAND would fail later and less clearly.
            kill(pid, SIGTERM)
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            throw error
        }
        let signalled = status & 0x7f
        return signalled == 0 ? (status >> 8) & 0xff : 128 + signalled
    }
}
