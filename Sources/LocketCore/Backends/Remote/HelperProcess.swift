import Glibc
import LocketSupport
import LocketWire

/// The running `locket-postgres` helper: started with posix_spawn (no shell),
/// its stdin and stdout one end of a socket pair, stderr /dev/null, no other
/// descriptor, and only the environment libpq reads.
///
final class HelperProcess {
    /// The helper's process id.
    let pid: pid_t
    /// Frames to and from the helper.
    let channel: Channel
    private var reaped = false

    /// The variables passed on to the helper: libpq's own (so `.pgpass`,
    /// service files and TLS files are found as for psql), and nothing else.
    static let passedVariables = [
        "HOME", "USER", "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGPASSWORD", "PGPASSFILE",
        "PGSERVICE", "PGSERVICEFILE", "PGSYSCONFDIR", "PGSSLROOTCERT", "PGSSLCERT", "PGSSLKEY", "PGSSLCRL",
        "PGSSLCRLDIR", "PGAPPNAME", "PGCONNECT_TIMEOUT", "PGTARGETSESSIONATTRS", "PGKRBSRVNAME", "PGGSSLIB",
        "KRB5CCNAME", "PGREQUIRESSL",
    ]

    /// Starts `path` after checking that nobody but root or this user can
    /// replace it (it will hold the database password).
    init(path: String, environment: Environment) throws {
        try Self.checkExecutable(path)
        var variables: [String] = []
        for name in Self.passedVariables {
            if let value = try environment[name] { variables.append("\(name)=\(value)") }
        }
        var pair: [Int32] = [-1, -1]
        if let failure = nothingOrErrno("socketpair", { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) }).error {
            throw KeychainError(.notAvailable, "could not start the PostgreSQL helper: socketpair failed (errno \(failure.code))")
        }
        // Swift's Glibc doesn't export posix_spawn_file_actions_addclosefrom_np:
        // the helper closes every descriptor above 2 as its first act instead.
        let started = Spawner.spawn(path, argv: [Array("locket-postgres".utf8)], environment: variables.map { Array($0.utf8) },
                                    stdin: .descriptor(pair[1]), stdout: .descriptor(pair[1]), stderr: .devNull)
        close(pair[1])
        guard case .success(let child) = started else {
            close(pair[0])
            throw KeychainError(.notAvailable, "could not start the PostgreSQL helper \(path) (errno \(started.error!.code))")
        }
        pid = child
        channel = Channel(input: pair[0], output: pair[0])
    }

    deinit { stop() }

    /// Closes the stream (the helper rolls back and exits) and reaps it; a
    /// helper that doesn't exit within a second is killed.
    func stop() {
        guard !reaped else { return }
        reaped = true
        close(channel.input)
        for _ in 0..<100 {
            // Reaped, or not a child to wait for.
            if (try? Spawner.wait(pid, options: WNOHANG).get().pid) != 0 { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        _ = Spawner.wait(pid)
    }

    /// Refuses a helper that is not a regular executable file, or that a user
    /// other than root and the caller owns or can write (it sees the password).
    static func checkExecutable(_ path: String) throws {
        switch CompanionExecutable.refusal(at: path) {
        case nil: return
        case .missing:
            throw KeychainError(.notAvailable, "the PostgreSQL helper \(path) is missing: remote keychains need locket-postgres installed")
        case .notExecutable:
            throw KeychainError(.notAvailable, "the PostgreSQL helper \(path) is not an executable file")
        case .replaceable:
            throw KeychainError(.notAvailable, "the PostgreSQL helper \(path) can be replaced by another user; refusing to run it")
        }
    }
}
