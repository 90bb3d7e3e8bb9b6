import Foundation
import LocketCore
import LocketTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A real PostgreSQL server for one test class (SPEC §17 "Tests that must
/// exist"): Debian's initdb into a temporary directory, listening on a Unix
/// socket directory and on 127.0.0.1 with TLS (a throwaway CA made with
/// openssl here), every statement logged. PostgreSQL refuses to run as root,
/// so under root (CI) it runs as an unprivileged account made with useradd.
/// A watchdog stops it if the test process dies before `stop()`.
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
    private let account: (name: String, uid: uid_t, gid: gid_t)?
    private var watchdog: pid_t?
    private var watchdogInput: Int32?
    private var running = false

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

    /// Makes, configures and starts a server; throws XCTSkip only where the machine can't run one.
    init() throws {
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
            try setUp(bin)
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    private func setUp(_ bin: String) throws {
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
        try start()
        startWatchdog(bin)
    }

    /// Starts (or restarts after `stopServer`) the server and waits until it accepts connections.
    func start() throws {
        let bin = try Self.binaries()
        try runAsServer("\(bin)/pg_ctl", ["-D", data, "-l", log, "-w", "-t", "60", "start"])
        running = true
    }

    /// Stops the server now (`immediate`: as if it crashed; `fast`: aborts sessions, shuts down cleanly).
    func stopServer(mode: String = "fast") throws {
        let bin = try Self.binaries()
        try runAsServer("\(bin)/pg_ctl", ["-D", data, "-w", "-t", "60", "-m", mode, "stop"])
        running = false
    }

    /// Stops the server, removes its files and its account. Safe to call twice.
    func stop() {
        if running, let bin = try? Self.binaries() {
            _ = try? runAsServer("\(bin)/pg_ctl", ["-D", data, "-w", "-t", "60", "-m", "fast", "stop"])
            running = false
        }
        if let watchdog, let watchdogInput {
            // The server is stopped already; the watchdog's pg_ctl finds nothing to stop.
            close(watchdogInput)
            var status: Int32 = 0
            while waitpid(watchdog, &status, 0) < 0 && errno == EINTR {}
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

    /// A shell, run as the server's account, that waits for its stdin to
    /// close (this test process ending, however it ends) and then stops the server.
    private func startWatchdog(_ bin: String) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var arguments = ["/bin/sh", "-c", "cat >/dev/null; exec \"$0\" -D \"$1\" -m immediate stop", "\(bin)/pg_ctl", data]
        if let account { arguments = ["/usr/bin/setpriv", "--reuid=\(account.uid)", "--regid=\(account.gid)", "--clear-groups", "--"] + arguments }
        let program = arguments.removeFirst()
        if let pid = try? Self.spawn(program, arguments, environment: ["PATH": "/usr/bin:/bin"], stdin: .descriptor(fds[0]),
                                     stdout: "/dev/null", stderr: "/dev/null") {
            watchdog = pid
            watchdogInput = fds[1]
        } else {
            close(fds[1])
        }
        close(fds[0])
    }

    @discardableResult
    static func run(_ program: String, _ arguments: [String], environment: [String: String] = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]) throws -> Data {
        let scratch = "/tmp/locket-pg-run-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        defer { unlink("\(scratch).out"); unlink("\(scratch).err") }
        let pid = try spawn(program, arguments, environment: environment,
                            stdin: .devNull, stdout: "\(scratch).out", stderr: "\(scratch).err")
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let out = FileManager.default.contents(atPath: "\(scratch).out") ?? Data()
        let errors = FileManager.default.contents(atPath: "\(scratch).err") ?? Data()
        guard status == 0 else {
            throw ServerFailure(description: "\(program) \(arguments.joined(separator: " ")) ended with status \(status): "
                                + String(decoding: errors, as: UTF8.self))
        }
        return out
    }

    enum Input { case devNull, descriptor(Int32) }

    /// posix_spawn with stdin from /dev/null or `descriptor`, stdout and stderr to files.
    static func spawn(_ program: String, _ arguments: [String], environment: [String: String],
                      stdin: Input, stdout: String, stderr: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        switch stdin {
        case .devNull: posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .descriptor(let fd): posix_spawn_file_actions_adddup2(&actions, fd, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, program, &actions, nil, argv, envp)
        guard rc == 0 else { throw ServerFailure(description: "could not start \(program): errno \(rc)") }
        return pid
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

/// A test case with its own PostgreSQL server for the whole class, started
/// once before its first test and stopped after its last; a machine that
/// can't run one fails each test with the reason.
class PostgresTestCase: XCTestCase {
    nonisolated(unsafe) private static var servers: [ObjectIdentifier: Result<PostgresServer, Error>] = [:]

    override class func setUp() {
        super.setUp()
        servers[ObjectIdentifier(self)] = Result { try PostgresServer() }
    }

    override class func tearDown() {
        if case .success(let server)? = servers.removeValue(forKey: ObjectIdentifier(self)) { server.stop() }
        super.tearDown()
    }

    /// This class's server, or the error that kept it from starting.
    func running() throws -> PostgresServer {
        try XCTUnwrap(Self.servers[ObjectIdentifier(type(of: self))], "the class's server was not set up").get()
    }
}
