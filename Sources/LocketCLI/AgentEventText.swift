import LocketCore

/// The words of `locket ssh-agent`: one line per refused request, and the
/// variables it prints for a shell.
enum AgentEventText {
    /// The line written on stderr after `locket ssh-agent: `.
    static func line(_ event: AgentEvent) -> String {
        switch event {
        case .signRefused(let error): "sign refused: \(error.description)"
        case .identitiesRefused(let error): "identities refused: \(error.description)"
        case .addRefused:
            "ssh-add of a key refused: this agent serves the keychain's keys; add one with 'locket import' or 'locket key generate'"
        case .removeRefused: "removing identities refused: delete a key from the keychain with 'locket delete'"
        case .lockRefused: "agent lock refused: 'locket lock' locks the keychain's keys"
        case .unsupported(let type): "request refused: message type \(type) is not supported"
        case .malformed(let error): "request refused: \(error.description)"
        case .dropped(let error): "connection closed: \(error.description)"
        case .peerRefused(let uid): "connection refused: uid \(uid) is not the agent's user"
        }
    }

    /// What `ssh-agent -s` (or `-c`) prints: SSH_AUTH_SOCK and SSH_AGENT_PID, and the pid.
    static func variables(socket: String, pid: Int32, csh: Bool) -> String {
        let path = shellQuoted(socket)
        if csh {
            return "setenv SSH_AUTH_SOCK \(path);\nsetenv SSH_AGENT_PID \(pid);\necho Agent pid \(pid);\n"
        }
        return "SSH_AUTH_SOCK=\(path); export SSH_AUTH_SOCK;\nSSH_AGENT_PID=\(pid); export SSH_AGENT_PID;\necho Agent pid \(pid);\n"
    }

    /// `path` as one shell word: as it is when it holds only safe characters,
    /// else in single quotes (a path given with -a may hold anything).
    static func shellQuoted(_ path: String) -> String {
        let safe = path.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || "/._-+:@%,".utf8.contains(c)
        }
        if safe && !path.isEmpty { return path }
        return "'" + path.replacingAll("'", "'\\''") + "'"
    }
}
