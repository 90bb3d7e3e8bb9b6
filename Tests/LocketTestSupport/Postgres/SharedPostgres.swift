import Foundation
import LocketCore
import LocketRemote
import LocketSystem

#if canImport(Glibc)
import Glibc
#endif

// SPEC §17 "the same SecItem semantics as a file": the query, uniqueness and
// update suites run each of their tests against a file keychain and then
// against a remote one (KeychainTestCase.isConformanceSuite), in this server; the
// Remote* suites use it too, each test in a database of its own.

/// One PostgreSQL server for a whole `swift test` run. `swift test
/// --parallel` runs every test in a process of its own, so a server per
/// process (or per class) meant an initdb, four openssl runs and a useradd per
/// test, most of the remote suites' time (issue 12). The first test process
/// that needs the server starts it; the others find it through the run's
/// directory (`TestRun`). A watchdog in a session of its own stops the
/// server and removes its files once the run ends.
///
/// What a test does to the shared server stays in its own database (or
/// temporary tables, or a file named for the test); a test that stops or
/// restarts a server makes a private one (`PostgresServer()`).
public enum SharedPostgres {
    /// What another test process needs to use the server.
    struct State {
        let root: String
        let port: Int
        let password: String
        let account: (name: String, uid: uid_t, gid: gid_t)?
    }

    nonisolated(unsafe) private static var server: Result<PostgresServer, Error>?
    private static let lock = NSLock()

    /// The run's server, started by this call if no test process of the run started it yet.
    public static func running() throws -> PostgresServer {
        lock.lock()
        defer { lock.unlock() }
        if server == nil { server = Result { try attachOrStart() } }
        return try server!.get()
    }

    /// A new database in the shared server, as a remote keychain location
    /// over its socket: with locket's schema and no keychain
    /// (`makeKeychainDatabase`), or with `empty`, nothing.
    public static func newKeychainLocation(empty: Bool = false) throws -> RemoteLocation {
        let server = try running()
        let database = try empty ? server.makeDatabase() : server.makeKeychainDatabase()
        return RemoteLocation(url: "postgres:///\(database)?host=\(server.socket)", parameters: server.socketParameters(database: database),
                              helper: try PostgresServer.helperPath())
    }

    private static func attachOrStart() throws -> PostgresServer {
        let parent = try TestRun.parent()
        return try TestRun.locked("\(parent.directory)/lock") {
            let statePath = "\(parent.directory)/state"
            if let text = FileManager.default.contents(atPath: statePath) {
                let state = try decode(text)
                // The server's socket is there while it runs.
                if access("\(state.root)/sock/.s.PGSQL.\(state.port)", F_OK) == 0 { return PostgresServer(attaching: state) }
            }
            let server = try PostgresServer(outliving: parent)
            let state = [server.root, String(server.port), server.password, server.accountLine].joined(separator: "\n")
            let scratch = "\(statePath).\(getpid())"
            try Data(state.utf8).write(to: URL(fileURLWithPath: scratch))
            guard rename(scratch, statePath) == 0 else { throw PostgresServer.ServerFailure(description: "rename \(statePath): errno \(errno)") }
            return server
        }
    }

    private static func decode(_ text: Data) throws -> State {
        let lines = String(decoding: text, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count == 4, let port = Int(lines[1]) else { throw PostgresServer.ServerFailure(description: "a damaged shared server state") }
        var account: (name: String, uid: uid_t, gid: gid_t)?
        if !lines[3].isEmpty {
            let parts = lines[3].split(separator: " ").map(String.init)
            guard parts.count == 3, let uid = uid_t(parts[1]), let gid = gid_t(parts[2]) else {
                throw PostgresServer.ServerFailure(description: "a damaged shared server state")
            }
            account = (parts[0], uid, gid)
        }
        return State(root: lines[0], port: port, password: lines[2], account: account)
    }
}
