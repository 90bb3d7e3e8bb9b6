import LocketCore
import LocketRemote
import LocketTestSupport
import XCTest

/// LocketTestSupport's PostgreSQL server, with what that target (which has
/// no XCTest) throws where the machine can't run one, `TestUnavailable`,
/// turned into a skip naming it. LocketCLITests has the same few lines.
enum Postgres {
    static func skipping<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let unavailable as TestUnavailable { throw XCTSkip(unavailable.reason) }
    }

    /// The run's shared server (`SharedPostgres`).
    static func shared() throws -> PostgresServer { try skipping { try SharedPostgres.running() } }

    /// A new database of the shared server, as a location over its socket:
    /// locket's schema and no keychain, or with `empty`, nothing.
    static func newKeychainLocation(empty: Bool = false) throws -> RemoteLocation {
        try skipping { try SharedPostgres.newKeychainLocation(empty: empty) }
    }

    /// The helper under test.
    static func helperPath() throws -> String { try skipping { try PostgresServer.helperPath() } }
}

/// A test case whose tests use the PostgreSQL server of the `swift test`
/// run (`SharedPostgres`), each in a database of its own
/// (`server.makeDatabase()`); a test that stops or restarts its server takes
/// `privateServer()`, made once for its class. A machine that can't run one
/// skips each test with the reason.
class PostgresTestCase: XCTestCase {
    nonisolated(unsafe) private static var servers: [ObjectIdentifier: Result<PostgresServer, Error>] = [:]

    override class func tearDown() {
        if case .success(let server)? = servers.removeValue(forKey: ObjectIdentifier(self)) { server.stop() }
        super.tearDown()
    }

    /// The run's shared server, or the error that kept it from starting.
    func running() throws -> PostgresServer { try Postgres.shared() }

    /// A server of this class's own, started on first use and stopped after
    /// the class's last test: for a test that stops or restarts it.
    func privateServer() throws -> PostgresServer {
        let key = ObjectIdentifier(type(of: self))
        if Self.servers[key] == nil { Self.servers[key] = Result { try Postgres.skipping { try PostgresServer() } } }
        return try Self.servers[key]!.get()
    }
}
