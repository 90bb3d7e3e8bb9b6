import Foundation
import LocketCore
import LocketRemote
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The remote keychain's schema and the statements enroll/approve/revoke,
/// the item store and the audit will run, each through RemoteConnection
/// against a real server. Ends with a pg_dump and the server log grepped for
/// every plaintext value the tests sent.
final class RemoteSchemaTests: PostgresTestCase {
    func prepared() throws -> (PostgresServer, RemoteConnection, String) {
        let server = try running()
        let database = try server.makeDatabase()
        let connection = try server.connect(database: database)
        XCTAssertEqual(try RemoteSchema.prepare(connection), 0)
        return (server, connection, database)
    }

    func testPrepareCreatesOnceAndIsIdempotent() throws {
        let (_, connection, _) = try prepared()
        XCTAssertEqual(try RemoteSchema.prepare(connection), RemoteSchema.version)
        let tables = try connection.execute("SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'locket' ORDER BY 1")
        XCTAssertEqual(tables.compactMap { $0[0].text }, ["audit", "blind", "devices", "group_keys", "groups", "items", "meta", "nodes", "roster", "states"])
    }

    func testConcurrentPreparesMakeOneSchema() throws {
        let server = try running()
        let database = try server.makeDatabase()
        nonisolated(unsafe) let results = UnsafeMutableBufferPointer<Int32>.allocate(capacity: 4)
        defer { results.deallocate() }
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            results[index] = (try? RemoteSchema.prepare(server.connect(database: database))) ?? -1
        }
        XCTAssertEqual(results.filter { $0 == 0 }.count, 1, "exactly one creator: \(Array(results))")
        XCTAssertEqual(results.filter { $0 == RemoteSchema.version }.count, 3)
    }

    func testANewerSchemaIsRefusedAndLeftAlone() throws {
        let (_, connection, _) = try prepared()
        try connection.execute("UPDATE locket.meta SET value = int4send(99) WHERE name = 'schema'")
        XCTAssertThrowsError(try RemoteSchema.prepare(connection)) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .invalidKeychain)
        }
        XCTAssertEqual(try connection.execute("SELECT value FROM locket.meta WHERE name = 'schema'").first?[0].bytes, [0, 0, 0, 99])
    }

    func testUniquenessIsTheServersConstraint() throws {
        let (_, connection, _) = try prepared()
        let pk = Array("pk-digest-1".utf8)
        try connection.execute(RemoteStatements.insertItem, [.bytes([1]), .text("genp"), .text("ak"), .text("team"), .bytes(pk), .bytes([0xa1]), .bytes([0xd1]), .bytes([1]), .bytes([1])])
        XCTAssertThrowsError(try connection.execute(RemoteStatements.insertItem,
                                                    [.bytes([2]), .text("genp"), .text("ak"), .text("team"), .bytes(pk), .bytes([0xa2]), .bytes([0xd2]), .bytes([1]), .bytes([1])])) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .duplicateItem)
            XCTAssertTrue("\(error)".contains("items_primary_key"), "\(error)")
        }
        // Another group or class is another item.
        try connection.execute(RemoteStatements.insertItem, [.bytes([3]), .text("genp"), .text("ak"), .text("ops"), .bytes(pk), .bytes([0xa3]), .bytes([0xd3]), .bytes([1]), .bytes([1])])
        try connection.execute(RemoteStatements.insertItem, [.bytes([4]), .text("inet"), .text("ak"), .text("team"), .bytes(pk), .bytes([0xa4]), .bytes([0xd4]), .bytes([1]), .bytes([1])])
        XCTAssertEqual(try connection.execute(RemoteStatements.selectByPrimaryKey, [.bytes(pk), .text("genp"), .text("team")]).first?["ref"].bytes, [1])
    }

    func testThisDeviceOnlyClassesAreRefused() throws {
        let (_, connection, _) = try prepared()
        for pdmn in ["aku", "cku", "dku", "akpu"] {
            XCTAssertThrowsError(try connection.execute(RemoteStatements.insertItem,
                                                        [.bytes(Array(pdmn.utf8)), .text("genp"), .text(pdmn), .text("g"), .bytes([9]), .bytes([]), .bytes([]), .bytes([1]), .bytes([1])])) { error in
                XCTAssertEqual((error as? KeychainError)?.code, .param, pdmn)
                XCTAssertTrue("\(error)".contains("23514"), "\(error)")
            }
        }
    }

    func testBlindIndexRowsGoWithTheirItem() throws {
        let (_, connection, _) = try prepared()
        let id = try XCTUnwrap(connection.execute(RemoteStatements.insertItem,
                                                  [.bytes([7]), .text("genp"), .text("ck"), .text("g"), .bytes([7]), .bytes([]), .bytes([]), .bytes([1]), .bytes([1])]).first?[0].int)
        for digest: Int64 in [-5, 0, Int64.max] { try connection.execute(RemoteStatements.insertBlind, [.int(id), .int(digest)]) }
        XCTAssertEqual(try connection.execute(RemoteStatements.selectByDigest, [.text("genp"), .int(Int64.max)]).first?["ref"].bytes, [7])
        XCTAssertEqual(try connection.execute(RemoteStatements.selectByDigest, [.text("inet"), .int(Int64.max)]).count, 0)
        try connection.execute(RemoteStatements.deleteItem, [.int(id)])
        XCTAssertEqual(try connection.execute("SELECT count(*) FROM locket.blind").first?[0].int, 0)
    }

    func testTheAuditTableIsAppendOnly() throws {
        let (_, connection, _) = try prepared()
        let device = try XCTUnwrap(connection.execute(RemoteStatements.enrollDevice, [.bytes([UInt8](repeating: 1, count: 32)), .text("ci-1"), .bytes([UInt8](repeating: 0xfe, count: 32))]).first?[0].int)
        try connection.execute("INSERT INTO locket.audit(device, seq, item, operation, body, signature) VALUES ($1, 1, $2, 'read', '', '')",
                               [.int(device), .bytes([1, 2, 3])])
        for statement in ["UPDATE locket.audit SET operation = 'add'", "DELETE FROM locket.audit", "TRUNCATE locket.audit"] {
            XCTAssertThrowsError(try connection.execute(statement), statement) { error in
                XCTAssertTrue("\(error)".contains("42501"), "\(statement): \(error)")
            }
        }
        let rows = try connection.execute(RemoteStatements.listAudit, [.int(0)])
        XCTAssertEqual(rows.count, 1)
        XCTAssertEqual(rows.first?["operation"].text, "read")
        XCTAssertEqual(rows.first?["item"].bytes, [1, 2, 3])
        let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
        XCTAssertLessThan(abs((rows.first?["at"].int ?? 0) - now), 60_000_000, "the time reads as µs since 1970")
        XCTAssertEqual(try connection.execute(RemoteStatements.listAudit, [.int(now + 60_000_000)]).count, 0)
    }

    /// enroll, approve, revoke: the device rows' statements and constraints.
    /// Groups, their generations and members are the signed membership's
    /// (RemoteDeviceTests, RemoteOperatorAttackTests), not these tables'.
    func testEnrollApproveRevokeStatements() throws {
        let (_, connection, _) = try prepared()
        let admin = try XCTUnwrap(connection.execute(RemoteStatements.enrollDevice, [.bytes([UInt8](repeating: 0xad, count: 32)), .text("admin"), .bytes([UInt8](repeating: 0x52, count: 32))]).first?[0].int)
        let laptop = try XCTUnwrap(connection.execute(RemoteStatements.enrollDevice, [.bytes([UInt8](repeating: 0x1a, count: 32)), .text("laptop"), .bytes([UInt8](repeating: 0xe5, count: 32))]).first?[0].int)
        for (key, signing) in [(0x1a, 0x77), (0x77, 0x52)] as [(UInt8, UInt8)] {
            XCTAssertThrowsError(try connection.execute(RemoteStatements.enrollDevice, [.bytes([UInt8](repeating: key, count: 32)), .text("again"), .bytes([UInt8](repeating: signing, count: 32))])) {
                XCTAssertEqual(($0 as? KeychainError)?.code, .duplicateItem, "each public key is one device's")
            }
        }
        XCTAssertThrowsError(try connection.execute(RemoteStatements.enrollDevice, [.bytes([1, 2]), .text("short key"), .bytes([UInt8](repeating: 0x33, count: 32))]))
        XCTAssertThrowsError(try connection.execute(RemoteStatements.enrollDevice, [.bytes([UInt8](repeating: 0x44, count: 32)), .text("short signing key"), .bytes([3])]))
        XCTAssertEqual(try connection.execute(RemoteStatements.listDevices).map { $0["state"].text }, ["pending", "pending"])
        for device in [admin, laptop] {
            try connection.transaction { transaction in
                _ = try transaction.execute(RemoteStatements.lockDevice, [.int(device)])
                XCTAssertEqual(try transaction.execute(RemoteStatements.approveDevice, [.int(device)]).count, 1)
            }
        }
        XCTAssertEqual(try connection.execute(RemoteStatements.approveDevice, [.int(admin)]).count, 0, "only a pending device is approved")
        XCTAssertEqual(try connection.execute(RemoteStatements.revokeDevice, [.int(laptop)]).count, 1)
        XCTAssertEqual(try connection.execute(RemoteStatements.revokeDevice, [.int(laptop)]).count, 0, "only an approved device is revoked")
        XCTAssertEqual(try connection.execute(RemoteStatements.listDevices).map { $0["state"].text }, ["approved", "revoked"])
    }

    func testParametersNeverReachTheServerLog() throws {
        let (server, connection, database) = try prepared()
        let secret = "marker-secret-\(UInt32.random(in: 0...UInt32.max))"
        let transient = "marker-transient-\(UInt32.random(in: 0...UInt32.max))"
        try connection.execute("SELECT $1::text, $2::bytea", [.text(transient), .bytes(Array(transient.utf8))])
        XCTAssertThrowsError(try connection.execute("SELECT 1 / $1::int8, $2::text", [.int(0), .text(transient)]))
        try connection.execute(RemoteStatements.insertItem, [.bytes([42]), .text("genp"), .text("ak"), .text("g"), .bytes([42]), .bytes([]), .bytes(Array(secret.utf8)), .bytes([1]), .bytes([1])])
        let log = server.logContents()
        XCTAssertNotNil(log.range(of: Data("INSERT INTO locket.items".utf8)), "the server log records statements")
        let hex = transient.utf8.map { String(format: "%02x", $0) }.joined()
        let secretHex = secret.utf8.map { String(format: "%02x", $0) }.joined()
        // With the default log_parameter_max_length (-1) the first two are
        // there: text verbatim, bytea as \x hex (checked when this was written).
        for needle in [transient, hex, secret, secretHex] {
            XCTAssertNil(log.range(of: Data(needle.utf8)), "\(needle) is in the server log")
        }
        let dump = try server.dump(database)
        XCTAssertNil(dump.range(of: Data(transient.utf8)))
        XCTAssertNil(dump.range(of: Data(hex.utf8)))
        // The stored value is in the dump (hex of the bytea): sealing it is the engine's job.
        XCTAssertNotNil(dump.range(of: Data(secretHex.utf8)))
    }
}
