import LocketCore
import XCTest

/// Issue 44: an empty `service` or `username` given over the Secret Service
/// is a value (python keyring's `keyring set SVC ''`): kept, matched and
/// given back as given, so a replace finds the item again. Items from before
/// (or made by `add`) read as having it and as not having it alike.
final class FreeFormMappingTests: KeychainTestCase {
    /// An item as the provider's CreateItem makes it.
    @discardableResult
    private func addOverTheBus(_ attributes: [String: String], secret text: String = "s") throws -> Item {
        var item = NewItem(itemClass: .genericPassword)
        for (attribute, value) in FreeFormMapping.split(attributes).mapped { try item.set(attribute, value) }
        item.freeForm = FreeFormMapping.freeForm(attributes, contentType: nil, uniqueByReference: true)
        return try keychain.add(item, data: secret(text))
    }

    /// What SearchItems answers: the query's matches that `has` keeps.
    private func search(_ attributes: [String: String]) throws -> [[UInt8]] {
        try keychain.matching(FreeFormMapping.query(attributes)).filter { FreeFormMapping.has($0, attributes) }.map(\.persistentRef)
    }

    private func stored(_ item: Item) throws -> Item { try keychain.matching(query(ref: item.persistentRef))[0] }

    func testAnEmptyUsernameIsKeptAndGivenBack() throws {
        let item = try addOverTheBus(["service": "svc", "username": ""])
        let found = try stored(item)
        XCTAssertEqual(found.string(.account), "", "the account stays empty")
        XCTAssertEqual(FreeFormMapping.attributes(of: found), ["service": "svc", "username": ""])
        XCTAssertTrue(found.freeForm.keepsEmptyMapped)
    }

    func testAnEmptyUsernameMatchesOnlyWhereItWasGiven() throws {
        let given = try addOverTheBus(["service": "svc", "username": ""])
        let absent = try addOverTheBus(["service": "svc"])
        XCTAssertEqual(try search(["service": "svc", "username": ""]), [given.persistentRef])
        XCTAssertEqual(try search(["service": "svc"]), [given.persistentRef, absent.persistentRef])
    }

    func testReplaceFindsTheItemWithExactlyTheseAttributes() throws {
        let given = try addOverTheBus(["service": "svc", "username": ""])
        let absent = try addOverTheBus(["service": "svc"])
        let exactly = { (attributes: [String: String]) in
            try self.keychain.matching(FreeFormMapping.query(attributes)).filter { FreeFormMapping.hasExactly($0, attributes) }.map(\.persistentRef)
        }
        XCTAssertEqual(try exactly(["service": "svc", "username": ""]), [given.persistentRef])
        XCTAssertEqual(try exactly(["service": "svc"]), [absent.persistentRef])
    }

    func testAnItemFromBeforeMatchesAnEmptyUsernameGivenOrNot() throws {
        // Made before issue 44 (no record of the empty username), or by `add`: either may have been meant.
        var old = try genp("svc", nil)
        old.freeForm = FreeForm(attributes: ["application": "Python keyring library"], uniqueByReference: true)
        let item = try keychain.add(old, data: secret("old"))
        let added = try addGenp("svc", nil)
        let keyring = ["service": "svc", "username": "", "application": "Python keyring library"]
        XCTAssertEqual(try search(["service": "svc", "username": ""]), [item.persistentRef, added.persistentRef])
        let found = try stored(item)
        XCTAssertTrue(FreeFormMapping.hasExactly(found, keyring), "keyring set replaces the item it stored before")
        XCTAssertTrue(FreeFormMapping.hasExactly(found, ["service": "svc", "application": "Python keyring library"]))
    }

    func testTheRecordOfAnEmptyUsernameSurvivesAnUpdateAndIsDroppedWithIt() throws {
        let item = try addOverTheBus(["service": "svc", "username": "", "k": "v"])
        try keychain.update(query(ref: item.persistentRef), changes: [.label: bytes("renamed")])
        XCTAssertEqual(FreeFormMapping.attributes(of: try stored(item)), ["service": "svc", "username": "", "k": "v"])
        // `locket update --remove-attr username` removes the account and the record.
        try keychain.update(query(ref: item.persistentRef), changes: [.account: []], freeFormEdit: FreeFormEdit(removing: ["username"]))
        XCTAssertEqual(FreeFormMapping.attributes(of: try stored(item)), ["service": "svc", "k": "v"])
    }

    func testTheFlagRoundTripsAndAnOlderRecordHasNone() throws {
        let item = try addOverTheBus(["username": "", "k": "v"])
        XCTAssertTrue(try stored(item).freeForm.keepsEmptyMapped)
        let older = try keychain.add({ var n = try genp("s", nil); n.freeForm = FreeForm(attributes: ["k": "v"], uniqueByReference: true); return n }(),
                                     data: secret("x"))
        XCTAssertFalse(try stored(older).freeForm.keepsEmptyMapped)
    }
}
