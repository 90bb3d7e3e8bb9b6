import CLocketSystem
import Glibc
import LocketSupport
import LocketWire

/// A helper program `locket` runs for what it can't link statically
/// (`locket-postgres`, `locket-tpm`), and what it may see of the caller.
package struct HelperProgram: Sendable {
    /// The executable's name, its argv[0].
    let name: String
    /// How messages name it: "the PostgreSQL helper".
    let description: String
    /// What is missing without it: "remote keychains need locket-postgres installed".
    let neededFor: String
    /// The caller's variables passed on (when set); no other is.
    let passedVariables: [String]
    /// The shared libraries it loads and the Debian packages that have them
    /// (the package's recommendations): "libpq (Debian's libpq5 package)".
    let libraries: String

    /// libpq's own variables (so `.pgpass`, service files and TLS files are
    /// found as for psql), and nothing else.
    package static let postgres = HelperProgram(
        name: "locket-postgres", description: "the PostgreSQL helper", neededFor: "remote keychains need locket-postgres installed",
        passedVariables: [
            "HOME", "USER", "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGPASSWORD", "PGPASSFILE",
            "PGSERVICE", "PGSERVICEFILE", "PGSYSCONFDIR", "PGSSLROOTCERT", "PGSSLCERT", "PGSSLKEY", "PGSSLCRL",
            "PGSSLCRLDIR", "PGAPPNAME", "PGCONNECT_TIMEOUT", "PGTARGETSESSIONATTRS", "PGKRBSRVNAME", "PGGSSLIB",
            "KRB5CCNAME", "PGREQUIRESSL",
        ],
        libraries: "libpq (Debian's libpq5 package)")
}

/// The running helper: started with posix_spawn (no shell), its stdin and
/// stdout one end of a socket pair, stderr /dev/null, no other descriptor,
/// and only the environment its `HelperProgram` lets through.
package final class HelperProcess {
    /// The helper's process id.
    package let pid: pid_t
    /// Frames to and from the helper.
    package let channel: Channel
    let program: HelperProgram
    private let path: String
    private var reaped = false
    /// The wait status, once `stop` reaped a helper that had exited.
    private var exitStatus: Int32?

    /// Starts `path` after checking that nobody but root or this user can
    /// replace it (it will hold passwords or keys).
    package init(path: String, program: HelperProgram, environment: Environment) throws {
        try Self.checkExecutable(path, program)
        self.program = program
        self.path = path
        var variables: [String] = []
        for name in program.passedVariables {
            if let value = try environment[name] { variables.append("\(name)=\(value)") }
        }
        var pair: [Int32] = [-1, -1]
        if let failure = nothingOrErrno("socketpair", { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) }).error {
            throw KeychainError(.notAvailable, "could not start \(program.description): socketpair failed (errno \(failure.code))")
        }
        // Swift's Glibc doesn't export posix_spawn_file_actions_addclosefrom_np:
        // the helper closes every descriptor above 2 as its first act instead.
        let started = Spawner.spawn(path, argv: [Array(program.name.utf8)], environment: variables.map { Array($0.utf8) },
                                    stdin: .descriptor(pair[1]), stdout: .descriptor(pair[1]), stderr: .devNull)
        close(pair[1])
        guard case .success(let child) = started else {
            close(pair[0])
            throw KeychainError(.notAvailable, "could not start \(program.description) \(path) (errno \(started.error!.code))")
        }
        pid = child
        channel = Channel(input: pair[0], output: pair[0])
    }

    deinit { stop() }

    /// Bounds every later read from the helper to `seconds`: a read that
    /// waits longer fails with EAGAIN (`Wire.Failure.system`).
    func limitReads(to seconds: Double) {
        var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        _ = setsockopt(channel.input, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Closes the stream (the helper finishes and exits) and reaps it; a
    /// helper that doesn't exit within a second is killed. Its end is
    /// waited for on a pidfd, so that it is reaped as it exits: polling
    /// every 10 ms, the first look (~1-3 ms after the close, before the
    /// helper had ended its connection and exited) added a sleep of 10 ms
    /// to every remote command (issue 38). Without pidfds, the polling.
    package func stop() {
        guard !reaped else { return }
        reaped = true
        close(channel.input)
        switch locket_wait_for_exit(pid, 1000) {
        case 1:
            if case .success(let ended) = Spawner.wait(pid, options: WNOHANG), ended.pid == pid {
                exitStatus = ended.status
                return
            }
        case 0:
            Glibc.kill(pid, SIGKILL)
            _ = Spawner.wait(pid)
            return
        default: break
        }
        for _ in 0..<100 {
            switch Spawner.wait(pid, options: WNOHANG) {
            case .success(let ended) where ended.pid == 0: usleep(10_000)
            case .success(let ended): exitStatus = ended.status; return
            case .failure: return  // not a child to wait for
            }
        }
        Glibc.kill(pid, SIGKILL)
        _ = Spawner.wait(pid)
    }

    /// For a helper that ended before its first answer: stops it and, when
    /// it exited 127, the dynamic loader's status for a shared library it
    /// could not load (a recommended package not installed), the error that
    /// says so; nil when it ended otherwise.
    package func missingLibraries() -> KeychainError? {
        stop()
        guard let status = exitStatus, status & 0x7f == 0, (status >> 8) & 0xff == 127 else { return nil }
        return KeychainError(.notAvailable, """
            \(program.description) \(path) could not start: a shared library it needs is missing, \(program.libraries); \
            `ldd \(path)` names it
            """)
    }

    /// Kills the helper at once and reaps it (it stopped answering).
    func kill() {
        guard !reaped else { return }
        reaped = true
        Glibc.kill(pid, SIGKILL)
        close(channel.input)
        _ = Spawner.wait(pid)
    }

    /// Refuses a helper that is not a regular executable file, or that a user
    /// other than root and the caller owns or can write (it sees secrets).
    static func checkExecutable(_ path: String, _ program: HelperProgram) throws {
        switch CompanionExecutable.refusal(at: path) {
        case nil: return
        case .missing:
            throw KeychainError(.notAvailable, "\(program.description) \(path) is missing: \(program.neededFor)")
        case .notExecutable:
            throw KeychainError(.notAvailable, "\(program.description) \(path) is not an executable file")
        case .replaceable:
            throw KeychainError(.notAvailable, "\(program.description) \(path) can be replaced by another user; refusing to run it")
        }
    }
}
