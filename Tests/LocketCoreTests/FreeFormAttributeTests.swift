import Foundation
import LocketCore
import XCTest

/// SPEC §18: free-form attributes (the Secret Service's) on generic
/// passwords: sealed, blind-indexed, matched exactly; items made unique by
/// reference (the bus's) coexist with the same attributes; nothing about
/// Apple's attributes and their uniqueness changes.
final class FreeFormAttributeTests: KeychainTestCase {
    @discardableResult
    private func addFree(_ attributes: [String: String], service: String? = nil, account: String? = nil, secret text: String = "s",
                         byReference: Bool = true, contentType: String? = nil) throws -> Item {
        var item = try genp(service, account)
        item.freeForm = FreeForm(attributes: attributes, contentType: contentType, uniqueByReference: byReference)
        return try keychain.add(item, data: secret(text))
    }

    private func freeQuery(_ pairs: [String: String], _ more: [Attribute: String] = [:]) throws -> Query {
        var q = try query(.genericPassword, more)
        for (name, value) in pairs { q.match(freeForm: name, value) }
        return q
    }

    func testFreeFormAttributesAreFoundByExactMatchOnly() throws {
        let made = try addFree(["xdg:schema": "org.example.A", "app": "one"], secret: "first")
        try addFree(["xdg:schema": "org.example.A", "app": "two"], secret: "second")
        let found = try keychain.search(try freeQuery(["app": "one"]), limit: .all, returnData: true)
        XCTAssertEqual(found.map(\.persistentRef), [made.persistentRef])
        XCTAssertEqual(found[0].freeForm.attributes, ["xdg:schema": "org.example.A", "app": "one"])
        XCTAssertEqual(found[0].secretString, "first")
        XCTAssertEqual(try keychain.search(try freeQuery(["xdg:schema": "org.example.A"]), limit: .all).count, 2)
        XCTAssertKeychainError(.itemNotFound, try keychain.search(try freeQuery(["app": "on"])))
        XCTAssertKeychainError(.itemNotFound, try keychain.search(try freeQuery(["App": "one"])))
        XCTAssertKeychainError(.itemNotFound, try keychain.search(try freeQuery(["app": "one", "other": ""])))
    }

    func testAnEmptyValueIsPresentAndDiffersFromAbsent() throws {
        let empty = try addFree(["flag": ""])
        try addFree(["other": "x"])
        XCTAssertEqual(try keychain.search(try freeQuery(["flag": ""]), limit: .all).map(\.persistentRef), [empty.persistentRef])
    }

    func testItemsUniqueByReferenceCoexistWithTheSameAttributes() throws {
        // The Secret Service has no uniqueness: secretstorage's suite makes two items with the same attributes.
        let a = try addFree(["k": "v"], service: "svc", account: "acct")
        let b = try addFree(["k": "v"], service: "svc", account: "acct")
        XCTAssertNotEqual(a.persistentRef, b.persistentRef)
        XCTAssertEqual(try keychain.search(try query(.genericPassword, [.service: "svc", .account: "acct"]), limit: .all).count, 2)
        // A SecItem add keeps Apple's rule among items made by add.
        try addGenp("svc", "acct")
        XCTAssertKeychainError(.duplicateItem, try addGenp("svc", "acct"))
    }

    func testAWholePrimaryKeyQueryFindsItemsUniqueByReference() throws {
        // `locket find -s S -a A` after `secret-tool store service S username A`:
        // the primary-key digest names only the item made by add, so the header flag sends the lookup through the blind rows.
        let bus = try addFree(["application": "x"], service: "github", account: "deploy", secret: "from-the-bus")
        let found = try keychain.search(try query(.genericPassword, [.service: "github", .account: "deploy"]), returnData: true)
        XCTAssertEqual(found.map(\.persistentRef), [bus.persistentRef])
        XCTAssertEqual(found[0].secretString, "from-the-bus")
    }

    func testUpdateKeepsFreeFormAttributesAndCanReplaceThem() throws {
        let item = try addFree(["k": "v"], service: "svc", contentType: "application/octet-stream")
        try keychain.update(query(ref: item.persistentRef), changes: [.comment: bytes("changed")], data: secret("new"))
        var found = try keychain.search(query(ref: item.persistentRef), returnData: true)[0]
        XCTAssertEqual(found.freeForm, FreeForm(attributes: ["k": "v"], contentType: "application/octet-stream", uniqueByReference: true))
        XCTAssertEqual(found.secretString, "new")
        try keychain.update(query(ref: item.persistentRef), changes: [:], freeForm: FreeForm(attributes: ["k2": "v2"]))
        found = try keychain.search(try freeQuery(["k2": "v2"]))[0]
        XCTAssertEqual(found.persistentRef, item.persistentRef)
        XCTAssertTrue(found.freeForm.uniqueByReference, "an update keeps the item's uniqueness")
        XCTAssertKeychainError(.itemNotFound, try keychain.search(try freeQuery(["k": "v"])))
    }

    func testRotationKeepsTheBlindRowsOfFreeFormAttributes() throws {
        let item = try addFree(["k": "v"])
        _ = try keychain.session.changePassword(old: secret(temporary.password!), new: secret("new password"), kdf: .weakForTests, rotate: true)
        XCTAssertEqual(try keychain.search(try freeQuery(["k": "v"])).map(\.persistentRef), [item.persistentRef])
    }

    func testLockedMatchesAreReportedNotMissing() throws {
        let item = try addFree(["k": "v"])
        keychain.session.lock(all: false)
        let matched = try keychain.matching(try freeQuery(["k": "v"]))
        XCTAssertEqual(matched.map(\.persistentRef), [item.persistentRef])
        XCTAssertEqual(matched[0].availability, .locked)
        XCTAssertKeychainError(.interactionNotAllowed, try keychain.search(try freeQuery(["k": "v"])))
        XCTAssertEqual(try keychain.matching(try freeQuery(["k": "other"])).count, 0)
    }

    func testNamesAndValuesAreNotInTheFile() throws {
        try addFree(["xdg:schema": "org.example.Sealed", "application-name": "plaintext-canary"], secret: "secret-canary")
        keychain.releaseFile()
        let path = temporary.path
        keychain = nil
        for suffix in ["", "-wal", "-journal"] {
            guard let data = FileManager.default.contents(atPath: path + suffix) else { continue }
            for canary in ["org.example.Sealed", "application-name", "plaintext-canary", "secret-canary", "xdg:schema"] {
                XCTAssertNil(data.range(of: Data(canary.utf8)), "\(canary) is in \(path + suffix)")
            }
        }
    }

    func testLimitsAreRefused() throws {
        var many: [String: String] = [:]
        for i in 0...FreeForm.maximumCount { many["a\(i)"] = "v" }
        XCTAssertKeychainError(.dataTooLarge, try addFree(many))
        XCTAssertKeychainError(.dataTooLarge, try addFree(["long": String(repeating: "v", count: Attribute.maximumValueLength + 1)]))
        XCTAssertKeychainError(.param, try addFree(["": "empty name"]))
    }

    func testTheMappingOfServiceAndUsername() throws {
        var item = try genp("svc", "alice")
        item.freeForm = FreeForm(attributes: ["application": "app"], uniqueByReference: true)
        let added = try keychain.add(item, data: secret("s"))
        XCTAssertEqual(FreeFormMapping.attributes(of: added), ["service": "svc", "username": "alice", "application": "app"])
        let found = try keychain.search(try FreeFormMapping.query(["service": "svc", "application": "app"]))
        XCTAssertEqual(found.map(\.persistentRef), [added.persistentRef])
        XCTAssertEqual(FreeFormMapping.split(["service": "s", "username": "u", "x": "y"]).free, ["x": "y"])
    }
}
