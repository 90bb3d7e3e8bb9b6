import LocketCore
import XCTest

/// Issue 44: every path into the engine refuses what the command line
/// refuses when it parses a value (65,536 bytes an attribute), with
/// errSecDataTooLarge and nothing changed: the Secret Service stored a
/// 60 MiB label, and one of 70,000 bytes made every backup fail.
final class AttributeSizeLimitTests: KeychainTestCase {
    private let largest = String(repeating: "l", count: Attribute.maximumValueLength)
    private let tooLong = String(repeating: "l", count: Attribute.maximumValueLength + 1)

    func testAddRefusesAnAttributePastTheLimit() throws {
        XCTAssertKeychainError(.dataTooLarge, try addGenp("svc", "a", [.label: tooLong]))
        XCTAssertKeychainError(.dataTooLarge, try addGenp("svc", tooLong))
        XCTAssertKeychainError(.dataTooLarge, try keychain.add(genp("svc", "a", [.label: tooLong]), data: secret("s"), updateExisting: true))
        XCTAssertEqual(try allGenp().count, 0)
        try addGenp("svc", "a", [.label: largest])
        XCTAssertEqual(try allGenp()[0].string(.label).utf8.count, Attribute.maximumValueLength)
    }

    func testUpdateRefusesAnAttributePastTheLimitAndChangesNothing() throws {
        try addGenp("svc", "a", [.label: "small"])
        XCTAssertKeychainError(.dataTooLarge, try keychain.update(query(.genericPassword, [.account: "a"]), changes: [.label: bytes(tooLong)]))
        XCTAssertEqual(try allGenp()[0].string(.label), "small")
    }

    func testBatchesRefuseToo() throws {
        let items = [(try genp("svc", "ok"), try secret("s")), (try genp("svc", "big", [.comment: tooLong]), try secret("s"))]
        XCTAssertKeychainError(.dataTooLarge, try keychain.addBatch(items))
        XCTAssertEqual(try allGenp().count, 0, "a batch is all or nothing")
    }

    func testAnAccessGroupIsAtMostWhatABackupCarries() throws {
        let group = String(repeating: "g", count: Keychain.maximumGroupLength + 1)
        XCTAssertKeychainError(.dataTooLarge, try addGenp("svc", "a", group: group))
        try addGenp("svc", "a")
        XCTAssertKeychainError(.dataTooLarge, try keychain.update(query(.genericPassword, [.account: "a"]), changes: [:], accessGroup: group))
    }
}
