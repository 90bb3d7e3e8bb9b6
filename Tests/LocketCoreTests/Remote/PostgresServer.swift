import Foundation
import LocketCore
import LocketSystem
import LocketTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A real PostgreSQL server (SPEC §17 "Tests that must exist"): Debian's
/// initdb into a temporary directory, listening on a Unix socket directory and
/// on 127.0.0.1 with TLS (a throwaway CA made with openssl here), every
/// statement logged. PostgreSQL refuses to run as root, so under root (CI) it
/// runs as an unprivileged account made with useradd.
///
/// Most tests use the one server of their `swift test` run
/// (`SharedPostgres`, each test in a database of its own); `init()` makes a
/// private one, for a test that stops or restarts it. A watchdog stops a
/// server when its owner ends, however it ends.
final class PostgresServer: @unchecked Sendable {
    /// The database superuser the tests connect as.
    static let user = "locket"

    let root: String
    let port: Int
    /// The socket directory.
    var socket: String { "\(root)/sock" }
    var data: String { "\(root)/data" }
    var log: String { "\(root)/server.log" }
    /// The CA that signed the server's certificate, and one that didn't.
    var caCertificate: String { "\(root)/tls/ca.crt" }
    var wrongCACertificate: String { "\(root)/tls/wrong-ca.crt" }
    /// The superuser's password (for TCP connections, which need one).
    let password: String
    /// The server's account for `SharedPostgres`'s state file: "NAME UID GID", or empty.
    var accountLine: String { account.map { "\($0.name) \($0.uid) \($0.gid)" } ?? "" }
    private let account: (name: String, uid: uid_t, gid: gid_t)?
    private var watchdog: pid_t?
    private var watchdogInput: Int32?
    private var running = false
    /// Whether this process made the server and stops it (false: another
    /// test process of the run made it, and its watchdog stops it).
    let owned: Bool

    /// The helper under test: LOCKET_POSTGRES_HELPER (make test sets the
    /// release build's), else the one built beside this test bundle.
    static func helperPath() throws -> String {
        if let path = ProcessInfo.processInfo.environment["LOCKET_POSTGRES_HELPER"], !path.isEmpty { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for directory in [bundle, bundle.deletingLastPathComponent()] {
            let candidate = directory.appendingPathComponent("locket-postgres").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw XCTSkip("locket-postgres is not built next to the tests: run `swift build --product locket-postgres` (make test does)")
    }

    /// Debian's server binaries (the newest installed version), or a skip naming what to install.
    static func binaries() throws -> String {
        let base = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []).compactMap(Int.init).sorted()
        guard let newest = versions.last, FileManager.default.isExecutableFile(atPath: "\(base)/\(newest)/bin/initdb") else {
            throw XCTSkip("no PostgreSQL server under \(base): make test-deps installs Debian's postgresql")
        }
        return "\(base)/\(newest)/bin"
    }

    /// Makes, configures and starts a private server, stopped by `stop()` or
    /// when this process ends; throws XCTSkip only where the machine can't run one.
    convenience init() throws {
        try self.init(outliving: nil)
    }

    /// Makes, configures and starts a server. `outliving` nil: it belongs to
    /// this process. Otherwise the server outlives this process and stops
    /// when the process `outliving` names ends (the `swift test` run, see
    /// `SharedPostgres`).
    init(outliving parent: SharedPostgres.Parent?) throws {
        owned = parent == nil
        let bin = try Self.binaries()
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") else {
            throw XCTSkip("openssl is missing (make test-deps installs it): the TLS tests need a throwaway CA")
        }
        if geteuid() == 0 {
            account = try Self.makeAccount()
        } else {
            account = nil
        }
        var template = Array("/tmp/locket-pg-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw POSIXError(.EIO) }
        root = String(cString: template)
        password = (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        port = try Loopback.freePort()
        do {
            try setUp(bin, outliving: parent)
        } catch {
            stop(force: true)
            throw error
        }
    }

    /// A server another test process of this run started (`SharedPostgres`).
    init(attaching state: SharedPostgres.State) {
        owned = false
        root = state.root
        port = state.port
        password = state.password
        account = state.account
        running = true
    }

    deinit { stop() }

    private func setUp(_ bin: String, outliving parent: SharedPostgres.Parent?) throws {
        try FileManager.default.createDirectory(atPath: "\(root)/sock", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: "\(root)/tls", withIntermediateDirectories: true)
        try makeCertificates()
        try Data("\(password)\n".utf8).write(to: URL(fileURLWithPath: "\(root)/pwfile"))
        if let account {
            // The server's own files: its account must own them, and the key must be private.
            for path in [root, "\(root)/sock", "\(root)/tls", "\(root)/pwfile", "\(root)/tls/server.key", "\(root)/tls/server.crt"] {
                guard chown(path, account.uid, account.gid) == 0 else { throw POSIXError(.EPERM) }
            }
        }
        chmod("\(root)/tls/server.key", 0o600)
        chmod(root, 0o755)
        try runAsServer("\(bin)/initdb", ["-D", data, "-U", Self.user, "--pwfile=\(root)/pwfile", "-E", "UTF8", "--locale=C",
                                         "--auth-local=trust", "--auth-host=scram-sha-256", "-N"])
        let settings = """

            listen_addresses = '127.0.0.1'
            port = \(port)
            unix_socket_directories = '\(socket)'
            ssl = on
            ssl_cert_file = '\(root)/tls/server.crt'
            ssl_key_file = '\(root)/tls/server.key'
            # Every statement in the log: the tests grep it for the values they sent.
            log_statement = 'all'
            # What docs/REMOTE.md recommends: bind parameters are never logged
            # (the default, -1, logs them in full next to each statement).
            log_parameter_max_length = 0
            log_parameter_max_length_on_error = 0
            fsync = off
            max_connections = 40
            shared_buffers = 16MB

            """
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: "\(data)/postgresql.conf"))
        handle.seekToEndOfFile()
        handle.write(Data(settings.utf8))
        handle.closeFile()
        try start(bin)
        if let parent {
            try startDetachedWatchdog(bin, parent: parent)
        } else {
            startWatchdog(bin)
        }
    }

    /// Starts (or restarts after `stopServer`) a private server and waits until it accepts connections.
    func start() throws {
        precondition(owned, "the shared server is not stopped or restarted by a test: use a private PostgresServer()")
        try start(try Self.binaries())
    }

    private func start(_ bin: String) throws {
        try runAsServer("\(bin)/pg_ctl", ["-D", data, "-l", log, "-w", "-t", "60", "start"])
        running = true
    }

    /// Stops the server now (`immediate`: as if it crashed; `fast`: aborts sessions, shuts down cleanly).
    func stopServer(mode: String = "fast") throws {
        precondition(owned, "the shared server is not stopped or restarted by a test: use a private PostgresServer()")
        let bin = try Self.binaries()
        try runAsServer("\(bin)/pg_ctl", ["-D", data, "-w", "-t", "60", "-m", mode, "stop"])
        running = false
    }

    /// Stops a private server, removes its files and its account. Safe to
    /// call twice; does nothing to the shared server (its watchdog stops it).
    func stop() {
        stop(force: owned)
    }

    private func stop(force: Bool) {
        guard force else { return }
        if running, let bin = try? Self.binaries() {
            _ = try? runAsServer("\(bin)/pg_ctl", ["-D", data, "-w", "-t", "60", "-m", "fast", "stop"])
            running = false
        }
        if let watchdog, let watchdogInput {
            // The server is stopped already; the watchdog's pg_ctl finds nothing to stop.
            close(watchdogInput)
            _ = Spawner.wait(watchdog)
            self.watchdog = nil
            self.watchdogInput = nil
        }
        if !root.isEmpty { try? FileManager.default.removeItem(atPath: root) }
        if let account {
            _ = try? Self.run("/usr/sbin/userdel", [account.name])
        }
    }

    /// Connection parameters over the Unix socket (no TLS, no password).
    func socketParameters(database: String = "postgres") -> [(String, String)] {
        [("host", socket), ("port", String(port)), ("dbname", database), ("user", Self.user)]
    }

    /// Connection parameters over TCP to `host` with TLS verified against `ca` (the test CA by default).
    func tcpParameters(host: String = "localhost", database: String = "postgres", ca: String? = nil) -> [(String, String)] {
        [("host", host), ("port", String(port)), ("dbname", database), ("user", Self.user), ("sslrootcert", ca ?? caCertificate)]
    }

    /// A connection over the socket, with the helper under test.
    func connect(database: String = "postgres") throws -> RemoteConnection {
        try RemoteConnection(helper: try Self.helperPath(), parameters: socketParameters(database: database), environment: Environment([:]))
    }

    /// A new, empty database; its name.
    func makeDatabase() throws -> String {
        let name = "t\(UInt32.random(in: 0...UInt32.max))"
        let connection = try connect()
        // CREATE DATABASE takes no parameters; the name is made here, not given.
        try connection.execute("CREATE DATABASE \(name)")
        connection.close()
        return name
    }

    /// `pg_dump` of `database` (plain SQL, data included).
    func dump(_ database: String) throws -> Data {
        let bin = try Self.binaries()
        return try Self.run("\(bin)/pg_dump", ["-h", socket, "-p", String(port), "-U", Self.user, database])
    }

    /// The server log so far.
    func logContents() -> Data { FileManager.default.contents(atPath: log) ?? Data() }

    // MARK: Processes

    @discardableResult
    private func runAsServer(_ program: String, _ arguments: [String]) throws -> Data {
        if let account {
            return try Self.run("/usr/bin/setpriv", ["--reuid=\(account.uid)", "--regid=\(account.gid)", "--clear-groups", "--", program] + arguments,
                                environment: ["PATH": "/usr/bin:/bin", "LANG": "C", "HOME": root])
        }
        return try Self.run(program, arguments, environment: ["PATH": "/usr/bin:/bin", "LANG": "C", "HOME": root])
    }

    /// A shell that waits for its stdin to close (this test process ending,
    /// however it ends), then stops the server and removes its files and its
    /// account: a test process that crashed left both behind before.
    private func startWatchdog(_ bin: String) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let script = "cat >/dev/null\n" + cleanUpScript(bin)
        if let pid = try? Self.spawn("/bin/sh", ["-c", script], environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"], stdin: .descriptor(fds[0]),
                                     stdout: "/dev/null", stderr: "/dev/null") {
            watchdog = pid
            watchdogInput = fds[1]
        } else {
            close(fds[1])
        }
        close(fds[0])
    }

    /// Stops the server now (as if it crashed), removes its files and account.
    private func cleanUpScript(_ bin: String) -> String {
        let asServer = account.map { "/usr/bin/setpriv --reuid=\($0.uid) --regid=\($0.gid) --clear-groups -- " } ?? ""
        return """
            \(asServer)'\(bin)/pg_ctl' -D '\(data)' -m immediate -w -t 60 stop
            rm -rf -- '\(root)'
            \(account.map { "/usr/sbin/userdel '\($0.name)'" } ?? "")

            """
    }

    /// A shell, in a session of its own so that neither the end of this test
    /// process nor a ^C of the run's process group ends it, that waits for
    /// the process `parent` names to end (the same pid with the same start
    /// time: a reused pid is another process), then stops the server and
    /// removes its files, its account and the run's directory.
    private func startDetachedWatchdog(_ bin: String, parent: SharedPostgres.Parent) throws {
        let script = """
            while [ "$(sed 's/.*) //' /proc/$1/stat 2>/dev/null | cut -d' ' -f20)" = "$2" ]; do sleep 1; done
            rm -rf -- "$3"

            """ + cleanUpScript(bin)
        // Nothing here waits for it: it outlives this process, and init reaps it.
        _ = try Self.spawn("/bin/sh", ["-c", script, "watchdog", String(parent.pid), parent.startTime, parent.directory],
                           environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"], stdin: .devNull, stdout: "/dev/null", stderr: "/dev/null",
                           newSession: true)
    }

    @discardableResult
    static func run(_ program: String, _ arguments: [String], environment: [String: String] = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]) throws -> Data {
        let scratch = "/tmp/locket-pg-run-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        defer { unlink("\(scratch).out"); unlink("\(scratch).err") }
        let pid = try spawn(program, arguments, environment: environment,
                            stdin: .devNull, stdout: "\(scratch).out", stderr: "\(scratch).err")
        let status = (try? Spawner.wait(pid).get().status) ?? 0
        let out = FileManager.default.contents(atPath: "\(scratch).out") ?? Data()
        let errors = FileManager.default.contents(atPath: "\(scratch).err") ?? Data()
        guard status == 0 else {
            throw ServerFailure(description: "\(program) \(arguments.joined(separator: " ")) ended with status \(status): "
                                + String(decoding: errors, as: UTF8.self))
        }
        return out
    }

    /// The test spawner with stdin from /dev/null or a descriptor, stdout
    /// and stderr to files, and no other descriptor of this process: a server
    /// that outlives this test process must not hold the pipe the test
    /// runner reads its output from. Swift's Glibc doesn't export
    /// posix_spawn_file_actions_addclosefrom_np, so bash closes them before
    /// it execs `program`; `newSession` puts it in a session of its own (setsid).
    static func spawn(_ program: String, _ arguments: [String], environment: [String: String],
                      stdin: ChildStream, stdout: String, stderr: String, newSession: Bool = false) throws -> pid_t {
        let closeAndExec = #"for f in /proc/$$/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] && eval "exec $n<&-"; done; exec "$@""#
        let command = (newSession ? ["/usr/bin/setsid"] : []) + ["/bin/bash", "-c", closeAndExec, "spawn", program] + arguments
        let spawned = ProcessSpawner.spawn(command[0], command.dropFirst().map { Array($0.utf8) }, environmentEntries: ProcessSpawner.entries(environment),
                                           stdin: stdin, stdout: .file(stdout, mode: 0o644), stderr: .file(stderr, mode: 0o644))
        return try spawned.get { ServerFailure(description: "could not start \(program): errno \($0.code)") }
    }

    struct ServerFailure: Error, CustomStringConvertible { let description: String }

    private static func makeAccount() throws -> (name: String, uid: uid_t, gid: gid_t) {
        for tool in ["/usr/sbin/useradd", "/usr/sbin/userdel", "/usr/bin/setpriv"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw XCTSkip("\(tool) is missing: PostgreSQL refuses to run as root and needs an account of its own")
        }
        let name = "lkt-pg-\(getpid())-\(UInt16.random(in: 0...9999))"
        try run("/usr/sbin/useradd", ["--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name])
        guard let entry = getpwnam(name) else { throw ServerFailure(description: "useradd \(name) made no account") }
        return (name, entry.pointee.pw_uid, entry.pointee.pw_gid)
    }

    /// A CA, a server certificate for localhost and 127.0.0.1 signed by it, and an unrelated CA.
    private func makeCertificates() throws {
        let tls = "\(root)/tls"
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try Self.run("/usr/bin/openssl", ["req", "-x509"] + ec + ["-keyout", "\(tls)/ca.key", "-out", "\(tls)/ca.crt", "-days", "2", "-subj", "/CN=locket test CA"])
        try Self.run("/usr/bin/openssl", ["req", "-x509"] + ec + ["-keyout", "\(tls)/wrong-ca.key", "-out", "\(tls)/wrong-ca.crt", "-days", "2",
                                                                  "-subj", "/CN=locket wrong CA"])
        try Self.run("/usr/bin/openssl", ["req"] + ec + ["-keyout", "\(tls)/server.key", "-out", "\(tls)/server.csr", "-subj", "/CN=localhost"])
        try Data("subjectAltName=DNS:localhost,IP:127.0.0.1\n".utf8).write(to: URL(fileURLWithPath: "\(tls)/san.ext"))
        try Self.run("/usr/bin/openssl", ["x509", "-req", "-in", "\(tls)/server.csr", "-CA", "\(tls)/ca.crt", "-CAkey", "\(tls)/ca.key",
                                          "-CAcreateserial", "-out", "\(tls)/server.crt", "-days", "2", "-extfile", "\(tls)/san.ext"])
    }
}

/// A test case whose tests use the PostgreSQL server of the `swift test`
/// run (`SharedPostgres`), each in a database of its own
/// (`server.makeDatabase()`); a test that stops or restarts its server takes
/// `privateServer()`, made once for its class. A machine that can't run one
/// fails each test with the reason.
class PostgresTestCase: XCTestCase {
    nonisolated(unsafe) private static var servers: [ObjectIdentifier: Result<PostgresServer, Error>] = [:]

    override class func tearDown() {
        if case .success(let server)? = servers.removeValue(forKey: ObjectIdentifier(self)) { server.stop() }
        super.tearDown()
    }

    /// The run's shared server, or the error that kept it from starting.
    func running() throws -> PostgresServer {
        try SharedPostgres.running()
    }

    /// A server of this class's own, started on first use and stopped after
    /// the class's last test: for a test that stops or restarts it.
    func privateServer() throws -> PostgresServer {
        let key = ObjectIdentifier(type(of: self))
        if Self.servers[key] == nil { Self.servers[key] = Result { try PostgresServer() } }
        return try Self.servers[key]!.get()
    }
}
