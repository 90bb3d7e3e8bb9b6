import Foundation
import LocketCore
import XCTest

// SPEC §17 "the same SecItem semantics as a file": the query, uniqueness and
// update suites run each of their tests against a file keychain and then
// against a remote one (KeychainTestCase.alsoRemote), in this server.

/// One server for every conformance suite, started by the first test that
/// needs it and stopped when the test process exits (its watchdog stops it
/// if the process is killed). Stopped through `PostgresServer.stop`, which
/// also removes its directory and, under root, the account it ran as: with
/// only the watchdog, every test process (`make test` runs each test in its
/// own) left both behind, until useradd ran out of system group ids.
enum SharedPostgres {
    nonisolated(unsafe) private static var server: Result<PostgresServer, Error>?
    private static let lock = NSLock()

    static func running() throws -> PostgresServer {
        lock.lock()
        defer { lock.unlock() }
        if server == nil {
            server = Result { try PostgresServer() }
            atexit { SharedPostgres.stop() }
        }
        return try server!.get()
    }

    /// At exit: the server stopped, its files and account removed.
    private static func stop() {
        lock.lock()
        defer { lock.unlock() }
        if case .success(let running)? = server { running.stop() }
        server = nil
    }

    /// A new database in the shared server, as a remote keychain location over its socket.
    static func newKeychainLocation() throws -> RemoteLocation {
        let server = try running()
        let database = try server.makeDatabase()
        return RemoteLocation(url: "postgres:///\(database)?host=\(server.socket)", parameters: server.socketParameters(database: database),
                              helper: try PostgresServer.helperPath())
    }
}
