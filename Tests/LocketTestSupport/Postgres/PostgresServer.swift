import Foundation
import LocketCore
import LocketRemote
import LocketSystem

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
/// server when its owner ends, however it ends. Where the machine can't run
/// one, it throws `TestUnavailable` (each test target's `PostgresTestCase`
/// and `Postgres` turn that into a skip: this target has no XCTest).
/// Processes, the account and the certificates: `PostgresServer+Setup.swift`;
/// the tests' databases: `PostgresServer+Databases.swift`.
public final class PostgresServer: @unchecked Sendable {
    /// The database superuser the tests connect as.
    public static let user = "locket"

    public let root: String
    public let port: Int
    /// The socket directory.
    public var socket: String { "\(root)/sock" }
    public var data: String { "\(root)/data" }
    public var log: String { "\(root)/server.log" }
    /// The CA that signed the server's certificate, and one that didn't.
    public var caCertificate: String { "\(root)/tls/ca.crt" }
    public var wrongCACertificate: String { "\(root)/tls/wrong-ca.crt" }
    /// The superuser's password (for TCP connections, which need one); the
    /// same for every server of a run (`makeFiles`).
    public internal(set) var password: String
    /// The server's account for `SharedPostgres`'s state file: "NAME UID GID", or empty.
    var accountLine: String { account.map { "\($0.name) \($0.uid) \($0.gid)" } ?? "" }
    let account: (name: String, uid: uid_t, gid: gid_t)?
    var watchdog: pid_t?
    var watchdogInput: Int32?
    var running = false
    /// `makeDatabase`'s connection, made on its first call.
    var admin: RemoteConnection?
    let adminLock = NSLock()
    /// Whether this object found the server's keychain template made (`makeKeychainDatabase`).
    var hasKeychainTemplate = false
    /// Whether this process made the server and stops it (false: another
    /// test process of the run made it, and its watchdog stops it).
    public let owned: Bool
    /// A standby of another server of this process (`startStandby`): its
    /// files live under the primary's, whose watchdog stops and removes it.
    let isStandby: Bool

    /// The helper under test: LOCKET_POSTGRES_HELPER (make test sets the
    /// release build's), else the one built beside this test bundle.
    public static func helperPath() throws -> String {
        if let path = ProcessInfo.processInfo.environment["LOCKET_POSTGRES_HELPER"], !path.isEmpty { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for directory in [bundle, bundle.deletingLastPathComponent()] {
            let candidate = directory.appendingPathComponent("locket-postgres").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw TestUnavailable("locket-postgres is not built next to the tests: run `swift build --product locket-postgres` (make test does)")
    }

    /// Debian's server binaries (the newest installed version), or a skip naming what to install.
    public static func binaries() throws -> String {
        let base = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []).compactMap(Int.init).sorted()
        guard let newest = versions.last, FileManager.default.isExecutableFile(atPath: "\(base)/\(newest)/bin/initdb") else {
            throw TestUnavailable("no PostgreSQL server under \(base): make test-deps installs Debian's postgresql")
        }
        return "\(base)/\(newest)/bin"
    }

    /// Where servers keep their files: /dev/shm when it is a tmpfs with 4 GiB
    /// free, else /tmp. On this machine's ext4 /tmp, CREATE DATABASE (some
    /// 300 files) cost the server 60-150 ms of CPU, on tmpfs 30-35; the
    /// shared server of a make test holds ~180 databases (~1.3 GB) until the
    /// run ends (issue 38). Nothing a test checks depends on the disk: the
    /// servers run with fsync off, and a server stopped or killed keeps its
    /// files either way.
    static let filesDirectory: String = {
        let mounts = String(decoding: FileManager.default.contents(atPath: "/proc/self/mounts") ?? Data(), as: UTF8.self)
        let tmpfs = mounts.split(separator: "\n").contains { $0.split(separator: " ").dropFirst().prefix(2).elementsEqual(["/dev/shm", "tmpfs"]) }
        var info = statvfs()
        guard tmpfs, statvfs("/dev/shm", &info) == 0, UInt64(info.f_bavail) * UInt64(info.f_frsize) >= 4 << 30,
              access("/dev/shm", W_OK | X_OK) == 0 else { return "/tmp" }
        return "/dev/shm"
    }()

    /// Makes, configures and starts a private server, stopped by `stop()` or
    /// when this process ends; throws TestUnavailable only where the machine can't run one.
    public convenience init() throws {
        try self.init(outliving: nil)
    }

    /// Makes, configures and starts a server. `outliving` nil: it belongs to
    /// this process. Otherwise the server outlives this process and stops
    /// when the process `outliving` names ends (the `swift test` run, see
    /// `SharedPostgres`).
    init(outliving parent: TestRun.Parent?) throws {
        owned = parent == nil
        isStandby = false
        let bin = try Self.binaries()
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") else {
            throw TestUnavailable("openssl is missing (make test-deps installs it): the TLS tests need a throwaway CA")
        }
        if geteuid() == 0 {
            account = try Self.makeAccount()
        } else {
            account = nil
        }
        var template = Array("\(Self.filesDirectory)/locket-pg-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw POSIXError(.EIO) }
        root = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        password = ""
        port = try Loopback.freePort()
        do {
            try setUp(bin, outliving: parent)
        } catch {
            stop(force: true)
            throw error
        }
    }

    /// A standby of `primary` in `root` (under the primary's), listening on `port`; `startStandby` sets it up.
    init(standbyOf primary: PostgresServer, root: String, port: Int) {
        owned = true
        isStandby = true
        self.root = root
        self.port = port
        password = primary.password
        account = primary.account
    }

    /// A server another test process of this run started (`SharedPostgres`).
    init(attaching state: SharedPostgres.State) {
        owned = false
        isStandby = false
        root = state.root
        port = state.port
        password = state.password
        account = state.account
        running = true
    }

    deinit { stop() }

    private func setUp(_ bin: String, outliving parent: TestRun.Parent?) throws {
        try FileManager.default.createDirectory(atPath: "\(root)/sock", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: "\(root)/tls", withIntermediateDirectories: true)
        if let account {
            // The server's own files: its account must own them.
            for path in [root, "\(root)/sock", "\(root)/tls"] {
                guard chown(path, account.uid, account.gid) == 0 else { throw POSIXError(.EPERM) }
            }
        }
        chmod(root, 0o755)
        try makeFiles(bin)
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
            # No page is torn by a process killed or stopped with -m immediate
            # (the faults tests play), only by the machine going down; and
            # FILE_COPY's checkpoints would make every page's next change a
            # full-page image.
            full_page_writes = off
            # A test's database lives for the test: each worker the launcher
            # started for one (~130 in the remote classes) was a backend and
            # catalogue scans that nothing reads.
            autovacuum = off
            max_connections = 40
            shared_buffers = 16MB
            # Dynamic shared memory in files of the data directory, which goes
            # with the server: a server stopped with -m immediate (the shared
            # one's watchdog, the faults) left its segment in /dev/shm.
            dynamic_shared_memory_type = mmap

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
    public func start() throws {
        precondition(owned, "the shared server is not stopped or restarted by a test: use a private PostgresServer()")
        try start(try Self.binaries())
    }

    private func start(_ bin: String) throws {
        try runAsServer("\(bin)/pg_ctl", ["-D", data, "-l", log, "-w", "-t", "60", "start"])
        running = true
    }

    /// Stops the server now (`immediate`: as if it crashed; `fast`: aborts sessions, shuts down cleanly).
    public func stopServer(mode: String = "fast") throws {
        precondition(owned, "the shared server is not stopped or restarted by a test: use a private PostgresServer()")
        let bin = try Self.binaries()
        try runAsServer("\(bin)/pg_ctl", ["-D", data, "-w", "-t", "60", "-m", mode, "stop"])
        running = false
    }

    /// Stops a private server, removes its files and its account. Safe to
    /// call twice; does nothing to the shared server (its watchdog stops it).
    public func stop() {
        stop(force: owned)
    }

    private func stop(force: Bool) {
        guard force else { return }
        admin?.close()
        admin = nil
        if running, let bin = try? Self.binaries() {
            _ = try? runAsServer("\(bin)/pg_ctl", ["-D", data, "-w", "-t", "60", "-m", "fast", "stop"])
            running = false
        }
        // A standby's files and account are its primary's to remove.
        if isStandby { return }
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
    public func socketParameters(database: String = "postgres") -> [(String, String)] {
        [("host", socket), ("port", String(port)), ("dbname", database), ("user", Self.user)]
    }

    /// Connection parameters over TCP to `host` with TLS verified against `ca` (the test CA by default).
    public func tcpParameters(host: String = "localhost", database: String = "postgres", ca: String? = nil) -> [(String, String)] {
        [("host", host), ("port", String(port)), ("dbname", database), ("user", Self.user), ("sslrootcert", ca ?? caCertificate)]
    }

    /// `-k` for `database` over the Unix socket, as the user `locket` (no TLS, no password).
    public func socketURL(_ database: String) -> String {
        "postgres://\(Self.user)@/\(database)?host=\(socket)&port=\(port)"
    }

    /// `-k` for `database` over TCP to `host`, with `query` (TLS settings, a
    /// passfile) after the `?`; none when empty.
    public func tcpURL(_ database: String, host: String = "localhost", query: String = "") -> String {
        "postgres://\(Self.user)@\(host):\(port)/\(database)" + (query.isEmpty ? "" : "?" + query)
    }

    /// A connection over the socket, with the helper under test.
    public func connect(database: String = "postgres") throws -> RemoteConnection {
        try RemoteConnection(helper: try Self.helperPath(), parameters: socketParameters(database: database), environment: Environment([:]))
    }

    /// `pg_dump` of `database` (plain SQL, data included).
    public func dump(_ database: String) throws -> Data {
        let bin = try Self.binaries()
        return try Self.run("\(bin)/pg_dump", ["-h", socket, "-p", String(port), "-U", Self.user, database])
    }

    /// The server log so far.
    public func logContents() -> Data { FileManager.default.contents(atPath: log) ?? Data() }
}
