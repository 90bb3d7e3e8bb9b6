@testable import LocketCore
@testable import LocketRemote
import XCTest

/// Issue 28's wording and compatibility: a schema version reset to 0 is
/// not an empty database (no hint sends the user to an `init` that would
/// fail on raw SQL), a keychain of the previous release (schema 1) is
/// refused with what to do, and a write whose connection is lost says it
/// was not applied rather than "could not connect".
final class RemoteSchemaVersionTests: PostgresTestCase {
    private let machines = RemoteMachines()

    override func tearDown() { machines.removeAll() }

    func testASchemaVersionResetToZeroIsReportedAsDamageAndInitRefusesCleanly() throws {
        let (admin, location, database) = try machines.created(kdf: .weakForTests)
        let sql = try running().connect(database: database)
        try sql.execute("UPDATE locket.meta SET value = int4send(0) WHERE name = 'schema'")
        XCTAssertThrowsError(try admin.open()) { error in
            let error = error as? KeychainError
            XCTAssertEqual(error?.code, .invalidKeychain, "\(String(describing: error))")
            XCTAssertNil(error?.reason, "no 'no keychain' reason, whose hint is init")
            XCTAssertTrue(error?.message.contains("schema version is missing or 0") == true, "\(String(describing: error))")
        }
        XCTAssertThrowsError(try Keychain.createRemote(location, password: secret("pw"), kdf: .weakForTests, environment: admin.environment)) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .invalidKeychain, "\(error)")
            XCTAssertFalse("\(error)".contains("SQLSTATE"), "no raw SQL error: \(error)")
        }
    }

    /// Schema 1 (issue 17's release) had no signing keys, signed membership
    /// or state: refused at open and by `prepare`, not migrated, and left as it is.
    func testAKeychainOfThePreviousReleaseIsRefusedWithWhatToDo() throws {
        let (admin, location, database) = try machines.created(kdf: .weakForTests)
        let sql = try running().connect(database: database)
        try sql.execute("UPDATE locket.meta SET value = int4send(1) WHERE name = 'schema'")
        XCTAssertThrowsError(try admin.open()) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .invalidKeychain, "\(error)")
            XCTAssertTrue("\(error)".contains("earlier locket (remote schema version 1)"), "\(error)")
            XCTAssertTrue("\(error)".contains("dump --data"), "\(error)")
        }
        XCTAssertThrowsError(try RemoteSchema.prepare(try RemoteStore(location, password: nil, environment: admin.environment).connection)) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .invalidKeychain, "\(error)")
        }
        XCTAssertEqual(try sql.execute("SELECT value FROM locket.meta WHERE name = 'schema'").first?[0].bytes, [0, 0, 0, 1])
    }

    func testAWriteWhoseConnectionIsLostSaysItWasNotApplied() throws {
        let server = try running()
        let database = try server.makeDatabase()
        let sql = try server.connect(database: database)
        try sql.execute("CREATE TABLE t(n int)")
        let writer = try server.connect(database: database)
        // A database can't refuse connections to itself: from another one.
        let admin = try server.connect()
        defer { _ = try? admin.execute("ALTER DATABASE \(database) ALLOW_CONNECTIONS true") }
        XCTAssertThrowsError(try writer.transaction { transaction in
            try transaction.execute("INSERT INTO t VALUES (1)")
            let pid = try XCTUnwrap(transaction.execute("SELECT pg_backend_pid()").first?[0].int)
            // The operator (or a failover) cuts it, and the database takes no new connection.
            try admin.execute("ALTER DATABASE \(database) ALLOW_CONNECTIONS false")
            try sql.execute("SELECT pg_terminate_backend($1::int)", [.int(pid)])
            try transaction.execute("INSERT INTO t VALUES (2)")
        }) { error in
            XCTAssertTrue("\(error)".contains("the change was not applied"), "\(error)")
            XCTAssertFalse("\(error)".hasPrefix("could not connect"), "\(error)")
        }
        try admin.execute("ALTER DATABASE \(database) ALLOW_CONNECTIONS true")
        XCTAssertEqual(try sql.execute("SELECT count(*) FROM t").first?[0].int, 0)
    }
}
