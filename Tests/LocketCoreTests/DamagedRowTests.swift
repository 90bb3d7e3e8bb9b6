import LocketCore
import XCTest

/// SPEC §5/§7: a damaged row fails with errSecDecode; no other item is
/// affected, a read failure never deletes, and an update stays all or nothing.
final class DamagedRowTests: KeychainTestCase {
    /// Flips one byte of `column` (attrs or data) in the row with `ref`, with the keychain closed.
    private func flipByte(_ column: String, of ref: [UInt8]) throws {
        keychain = nil
        do {
            // Closed before the keychain opens again: an open connection holds the file.
            let db = try ReliabilityDatabase(temporary.path)
            var value = try XCTUnwrap(try db.rows("SELECT \(column) FROM items WHERE ref = ?", [ref]).first?[0])
            value[value.count - 1] ^= 0x01
            XCTAssertEqual(try db.change("UPDATE items SET \(column) = ?1 WHERE ref = ?2", [value, ref]), 1)
        }
        keychain = try temporary.open()
    }

    func testDamagedSecretFailsThatItemOnly() throws {
        try addGenp("svc", "alice", secret: "a")
        let bob = try addGenp("svc", "bob", secret: "b")
        try addGenp("svc", "carol", secret: "c")
        try flipByte("data", of: bob.persistentRef)
        XCTAssertKeychainError(.decode, try keychain.search(query(.genericPassword, [.account: "bob"]), returnData: true))
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.account: "bob"])).count, 1, "its attributes still open")
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.account: "alice"]), returnData: true)[0].secretString, "a")
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.account: "carol"]), returnData: true)[0].secretString, "c")
    }

    func testDamagedAttributesFailThatItemOnlyAndDumpCarriesOn() throws {
        try addGenp("svc", "alice", secret: "a")
        let bob = try addGenp("svc", "bob", secret: "b")
        try addGenp("svc", "carol", secret: "c")
        try flipByte("attrs", of: bob.persistentRef)
        XCTAssertKeychainError(.decode, try keychain.search(query(.genericPassword, [.account: "bob"])))
        var seen: [Item.Availability] = []
        try keychain.dump(returnData: false) { seen.append($0.availability) }
        XCTAssertEqual(seen, [.available, .damaged, .available])
    }

    func testUpdateOverADamagedRowChangesNothing() throws {
        try addGenp("svc", "alice", secret: "a")
        let bob = try addGenp("svc", "bob", secret: "b")
        try flipByte("data", of: bob.persistentRef)
        XCTAssertKeychainError(.decode, try keychain.update(query(.genericPassword, [.service: "svc"]), changes: [.comment: bytes("x")]))
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.account: "alice"]))[0].string(.comment), "",
                       "the healthy match was not changed either")
    }

    func testAFailedReadNeverDeletesAndDeleteStillRemovesTheDamagedRow() throws {
        try addGenp("svc", "alice", secret: "a")
        let bob = try addGenp("svc", "bob", secret: "b")
        try flipByte("attrs", of: bob.persistentRef)
        XCTAssertKeychainError(.decode, try keychain.search(Query(itemClass: .genericPassword), limit: .all))
        var count = 0
        try keychain.dump(returnData: false) { _ in count += 1 }
        XCTAssertEqual(count, 2, "the failed read deleted nothing")
        XCTAssertEqual(try keychain.delete(query(ref: bob.persistentRef)), 1)
        XCTAssertEqual(try allGenp().map { $0.string(.account) }, ["alice"])
    }

    func testNewDataReplacesADamagedSecret() throws {
        // Giving new data does not need the old secret open.
        let bob = try addGenp("svc", "bob", secret: "b")
        try flipByte("data", of: bob.persistentRef)
        XCTAssertEqual(try keychain.update(query(ref: bob.persistentRef), changes: [:], data: secret("fresh")), 1)
        XCTAssertEqual(try keychain.search(query(ref: bob.persistentRef), returnData: true)[0].secretString, "fresh")
    }

    /// A keychain whose tables were edited (here a column renamed, as a
    /// flipped byte in the schema can do) is refused as no valid keychain
    /// (errSecInvalidKeychain), not as an I/O error, and the message carries
    /// none of SQLite's own words.
    func testEditedTablesAreDamageWithoutSQLitesWords() throws {
        try addGenp("svc", "alice", secret: "a")
        keychain = nil
        _ = try ReliabilityDatabase(temporary.path).change("ALTER TABLE items RENAME COLUMN ref TO fer", [])
        keychain = try temporary.open()
        do {
            _ = try keychain.search(query(.genericPassword, [.account: "alice"]))
            XCTFail("a search over edited tables succeeded")
        } catch let error as KeychainError {
            XCTAssertEqual(error.code, .invalidKeychain, "\(error)")
            XCTAssertFalse(error.description.contains("no such column"), "\(error)")
        }
    }
}

