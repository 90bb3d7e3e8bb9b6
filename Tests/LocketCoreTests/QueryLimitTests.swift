import LocketCore
import XCTest

/// Issue 44: a search naming as many free-form attributes as an item may
/// have (1,000) finds its item; one more is refused as a limit of the query
/// (errSecParam), never as a damaged keychain (SQLite's expression depth
/// refused the statement at 993 terms, which read as errSecInvalidKeychain).
final class QueryLimitTests: KeychainTestCase {
    private func pairs(_ count: Int) -> [String: String] {
        Dictionary(uniqueKeysWithValues: (0..<count).map { ("attribute-\($0)", "value-\($0)") })
    }

    func testASearchOfTheMostFreeFormAttributesFindsItsItem() throws {
        var new = try genp("many", "me")
        new.freeForm = FreeForm(attributes: pairs(FreeForm.maximumCount), uniqueByReference: true)
        let item = try keychain.add(new, data: secret("many"))
        var q = try query(.genericPassword, [.service: "many", .account: "me"])
        for (name, value) in pairs(FreeForm.maximumCount) { q.match(freeForm: name, value) }
        XCTAssertEqual(try keychain.search(q, returnData: true).map(\.persistentRef), [item.persistentRef])
        XCTAssertEqual(try keychain.matching(q).count, 1)
        try keychain.delete(q)
        XCTAssertEqual(try allGenp().count, 0)
    }

    func testOneMoreIsALimitOfTheQuery() throws {
        try addGenp("svc", "a")
        var q = Query(itemClass: .genericPassword)
        for (name, value) in pairs(FreeForm.maximumCount + 1) { q.match(freeForm: name, value) }
        XCTAssertKeychainError(.param, try keychain.search(q))
        XCTAssertKeychainError(.param, try keychain.matching(q))
    }
}
