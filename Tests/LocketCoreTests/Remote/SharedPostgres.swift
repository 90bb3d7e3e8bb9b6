import Foundation
import LocketCore
import XCTest

// SPEC §17 "the same SecItem semantics as a file": the query, uniqueness and
// update suites run each of their tests against a file keychain and then
// against a remote one (KeychainTestCase.alsoRemote), in this server.

/// One server for every conformance suite, started by the first test that
/// needs it and stopped by its watchdog when the test process ends.
enum SharedPostgres {
    nonisolated(unsafe) private static var server: Result<PostgresServer, Error>?
    private static let lock = NSLock()

    static func running() throws -> PostgresServer {
        lock.lock()
        defer { lock.unlock() }
        if server == nil { server = Result { try PostgresServer() } }
        return try server!.get()
    }

    /// A new database in the shared server, as a remote keychain location over its socket.
    static func newKeychainLocation() throws -> RemoteLocation {
        let server = try running()
        let database = try server.makeDatabase()
        return RemoteLocation(url: "postgres:///\(database)?host=\(server.socket)", parameters: server.socketParameters(database: database),
                              helper: try PostgresServer.helperPath())
    }
}
