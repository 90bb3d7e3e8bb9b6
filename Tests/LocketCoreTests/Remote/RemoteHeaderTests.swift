import Foundation
@testable import LocketCore
@testable import LocketRemote
import LocketSupport
import XCTest

/// The header of a remote keychain (SPEC §7 "Rollback", docs/REMOTE.md
/// "Integrity of the header"): the server alters its meta rows through an
/// admin connection (a wrap moved to another class, weaker password-hash
/// parameters, the MAC stripped, an older header put back) and every machine
/// refuses it with errSecDecode, at open when unlocked and at unlock, and
/// reads nothing (no audit row, no secret). A database of the shared server.
final class RemoteHeaderTests: XCTestCase {
    private let machines = RemoteMachines()

    override func tearDown() { machines.removeAll() }

    /// A keychain with one item in a new database; the creating machine, a
    /// second machine (unlocked, enrolled, approved), the location and an
    /// admin connection to the database.
    func made() throws -> (TemporaryKeychain, TemporaryKeychain, RemoteLocation, RemoteConnection) {
        let (first, location, database) = try machines.created()
        try first.open().add(genp("svc", "alice"), data: secret("one"))
        let second = try machines.enrolled(location, name: "second", approvedBy: first).machine
        XCTAssertEqual(try second.open().search(query(.genericPassword, [.service: "svc"]), returnData: true).map(\.secretString), ["one"])
        return (first, second, location, try Postgres.shared().connect(database: database))
    }

    func meta(_ admin: RemoteConnection) throws -> [String: [UInt8]] {
        var rows: [String: [UInt8]] = [:]
        for row in try admin.execute("SELECT name, value FROM locket.meta", []) { rows[row[0].text!] = row[1].bytes! }
        return rows
    }

    func setMeta(_ admin: RemoteConnection, _ name: String, _ value: [UInt8]) throws {
        try admin.execute("UPDATE locket.meta SET value = $2 WHERE name = $1", [.text(name), .bytes(value)])
    }

    func auditCount(_ admin: RemoteConnection) throws -> Int64 {
        try admin.execute("SELECT count(*) FROM locket.audit", []).first?[0].int ?? -1
    }

    /// The machine refuses the keychain with errSecDecode and nothing is read.
    func assertRefused(_ machine: TemporaryKeychain, _ admin: RemoteConnection, reason: KeychainError.Reason? = nil,
                       file: StaticString = #filePath, line: UInt = #line) throws {
        let before = try auditCount(admin)
        XCTAssertThrowsError(try machine.open().search(query(.genericPassword, [.service: "svc"]), returnData: true),
                             file: file, line: line) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .decode, "\(error)", file: file, line: line)
            if let reason { XCTAssertEqual((error as? KeychainError)?.reason, reason, "\(error)", file: file, line: line) }
        }
        XCTAssertEqual(try auditCount(admin), before, "nothing was read", file: file, line: line)
    }

    func testACreatedKeychainHasAnAuthenticatedHeaderAtGenerationOne() throws {
        let (first, _, _, admin) = try made()
        let rows = try meta(admin)
        XCTAssertEqual(rows["generation"].map { BigEndian.value($0) as UInt64 }, 1)
        XCTAssertEqual(rows["header_mac"]?.count, 32)
        XCTAssertNotNil(rows["key_check"])
        XCTAssertEqual(try first.open().generation, 1)
    }

    func testAWrapMovedToAnotherClassIsRefusedAtOpenAndAtUnlock() throws {
        let (first, second, location, admin) = try made()
        let rows = try meta(admin)
        // Both wraps are under the same KEK: moved, each still opens, as the wrong class's key.
        try setMeta(admin, "keybag.ak", try XCTUnwrap(rows["keybag.ck"]))
        try setMeta(admin, "keybag.ck", try XCTUnwrap(rows["keybag.ak"]))
        try assertRefused(first, admin)
        try assertRefused(second, admin)
        // A machine unlocking now gets nothing into its session.
        let third = try machines.joining(location)
        XCTAssertThrowsError(try third.unlock()) { XCTAssertEqual(($0 as? KeychainError)?.code, .decode, "\($0)") }
        XCTAssertFalse(try third.open().session.isUnlocked)
        // Put back, everything opens again.
        try setMeta(admin, "keybag.ak", try XCTUnwrap(rows["keybag.ak"]))
        try setMeta(admin, "keybag.ck", try XCTUnwrap(rows["keybag.ck"]))
        XCTAssertEqual(try first.open().search(query(.genericPassword, [.service: "svc"]), returnData: true).map(\.secretString), ["one"])
    }

    func testWeakerPasswordHashParametersAreRefused() throws {
        let (first, _, location, admin) = try made()
        try setMeta(admin, "kdf", KDFParameters(cost: .weakForTests).encoded)
        try assertRefused(first, admin)
        let other = try machines.joining(location)
        XCTAssertThrowsError(try other.unlock()) { XCTAssertEqual(($0 as? KeychainError)?.code, .decode, "\($0)") }
        // Parameters at the floor but not the keychain's: the MAC catches them on an unlocked machine.
        try setMeta(admin, "kdf", KDFParameters(cost: .interactive).encoded)
        try assertRefused(first, admin)
    }

    func testAHeaderWithoutItsMACOrWithAnEditedRowIsRefused() throws {
        let (first, _, _, admin) = try made()
        let rows = try meta(admin)
        try admin.execute("DELETE FROM locket.meta WHERE name = 'header_mac'", [])
        try assertRefused(first, admin)
        try admin.execute("INSERT INTO locket.meta(name, value) VALUES ('header_mac', $1)", [.bytes(try XCTUnwrap(rows["header_mac"]))])
        try setMeta(admin, "generation", BigEndian.bytes(Int64(7)))
        try assertRefused(first, admin)
        try setMeta(admin, "generation", try XCTUnwrap(rows["generation"]))
        try admin.execute("INSERT INTO locket.meta(name, value) VALUES ('timeout', $1)", [.bytes(BigEndian.bytes(Int64(1)))])
        try assertRefused(first, admin)
    }

    func testAnOlderHeaderPutBackIsRefusedAsRolledBackUntilAccepted() throws {
        let (first, second, _, admin) = try made()
        let older = try meta(admin)
        // A revocation moves the header on (generation 2): keys were replaced.
        let id = try machines.enrolled(try XCTUnwrap(first.remote), name: "third", approvedBy: first).id
        try first.open().remote!.revoke(device: id)
        XCTAssertEqual(try first.open().generation, 2)
        XCTAssertEqual(try second.open().search(query(.genericPassword, [.service: "svc"])).count, 1, "the second machine sees generation 2")
        // The server puts the older header back (its MAC is genuine).
        for name in ["generation", "header_mac", "key_check"] { try setMeta(admin, name, try XCTUnwrap(older[name])) }
        try assertRefused(first, admin, reason: .rolledBack)
        try assertRefused(second, admin, reason: .rolledBack)
        XCTAssertThrowsError(try first.open().session.unlock(password: secret("correct horse"), timeout: nil)) {
            XCTAssertEqual(($0 as? KeychainError)?.reason, .rolledBack, "\($0)")
        }
        // Going back on purpose: the owner's password, and the header must still be genuine.
        let opened = try first.open(acceptRollback: true)
        XCTAssertTrue(opened.isRolledBack)
        XCTAssertThrowsError(try opened.add(genp("svc", "bob"), data: secret("two"))) {
            XCTAssertEqual(($0 as? KeychainError)?.reason, .rolledBack, "\($0)")
        }
        XCTAssertThrowsError(try first.open(acceptRollback: true).session.acceptRollback(password: secret("wrong horse"))) {
            XCTAssertEqual(($0 as? KeychainError)?.code, .authFailed, "\($0)")
        }
        XCTAssertTrue(try first.open(acceptRollback: true).session.acceptRollback(password: secret("correct horse")))
        try first.unlock()
        XCTAssertEqual(try first.open().search(query(.genericPassword, [.service: "svc"]), returnData: true).map(\.secretString), ["one"])
        // The second machine still refuses until its owner accepts too.
        try assertRefused(second, admin, reason: .rolledBack)
    }
}
