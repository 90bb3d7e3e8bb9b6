import LocketCore
import XCTest

/// SPEC §3: items are unique by their class's primary key (plus access group);
/// left-out attributes take the empty value and that value takes part.
final class UniquenessTests: KeychainTestCase {
    /// Run against a file keychain and a remote one (SPEC §17 conformance).
    override class var isConformanceSuite: Bool { true }

    func testSamePrimaryKeyTwiceCollides() throws {
        try addGenp("svc", "alice", secret: "first")
        XCTAssertKeychainError(.duplicateItem, try addGenp("svc", "alice", secret: "second"))
        let all = try allGenp()
        XCTAssertEqual(all.count, 1)
        XCTAssertEqual(all.first?.secretString, "first")
    }

    func testItemDifferingOnlyInCommentCollidesAndFindWithThatCommentMisses() throws {
        try addGenp("svc", "alice", [.comment: "old"], secret: "first")
        XCTAssertKeychainError(.duplicateItem, try addGenp("svc", "alice", [.comment: "new"], secret: "second"))

        XCTAssertKeychainError(.itemNotFound, try keychain.search(query(.genericPassword, [.comment: "new"])))
        XCTAssertKeychainError(.itemNotFound,
                               try keychain.search(query(.genericPassword, [.service: "svc", .account: "alice", .comment: "new"])))
        let found = try keychain.search(query(.genericPassword, [.comment: "old"]), returnData: true)
        XCTAssertEqual(found.count, 1)
        XCTAssertEqual(found[0].secretString, "first")
    }

    func testEveryNonKeyAttributeOfGenericPasswordsCollides() throws {
        try addGenp("svc", "alice")
        let nonKey: [Attribute: String] = [.label: "L", .description: "D", .comment: "C", .generic: "G", .creator: "crtr", .type: "type"]
        for (attribute, value) in nonKey {
            XCTAssertKeychainError(.duplicateItem, try addGenp("svc", "alice", [attribute: value]), "\(attribute.longName)")
            XCTAssertKeychainError(.itemNotFound, try keychain.search(query(.genericPassword, [attribute: value])),
                                   "\(attribute.longName)")
        }
        XCTAssertEqual(try allGenp().count, 1)
    }

    func testEveryNonKeyAttributeOfInternetPasswordsCollides() throws {
        let key: [Attribute: [UInt8]] = [.server: bytes("example.com"), .account: bytes("alice"), .protocol: bytes("htps"),
                                         .port: [1, 187], .path: bytes("/x"), .securityDomain: bytes("realm"),
                                         .authenticationType: bytes("form")]
        try keychain.add(inet(key), data: secret("one"))
        let nonKey: [Attribute: [UInt8]] = [.label: bytes("L"), .description: bytes("D"), .comment: bytes("C"),
                                            .creator: bytes("crtr"), .type: bytes("type")]
        for (attribute, value) in nonKey {
            XCTAssertKeychainError(.duplicateItem, try keychain.add(inet(key.merging([attribute: value]) { $1 }), data: secret("two")),
                                   "\(attribute.longName)")
        }
        XCTAssertEqual(try keychain.search(Query(itemClass: .internetPassword), limit: .all).count, 1)
    }

    func testEveryKeyAttributeOfInternetPasswordsMakesItemsDistinct() throws {
        let base: [Attribute: [UInt8]] = [.server: bytes("example.com"), .account: bytes("alice"), .protocol: bytes("htps"),
                                          .port: [1, 187], .path: bytes("/x"), .securityDomain: bytes("realm"),
                                          .authenticationType: bytes("form")]
        try keychain.add(inet(base), data: secret("base"))
        let variants: [Attribute: [UInt8]] = [.server: bytes("example.org"), .account: bytes("bob"), .protocol: bytes("http"),
                                              .port: [0, 80], .path: bytes("/y"), .securityDomain: bytes("other"),
                                              .authenticationType: bytes("dflt")]
        for (attribute, value) in variants {
            XCTAssertNoThrow(try keychain.add(inet(base.merging([attribute: value]) { $1 }), data: secret(attribute.code)),
                             "\(attribute.longName) is part of the primary key")
        }
        XCTAssertEqual(try keychain.search(Query(itemClass: .internetPassword), limit: .all).count, 1 + variants.count)
    }

    func testEveryKeyAttributeLeftOutMakesItemsDistinct() throws {
        let base: [Attribute: [UInt8]] = [.server: bytes("example.com"), .account: bytes("alice"), .protocol: bytes("htps"),
                                          .port: [1, 187], .path: bytes("/x"), .securityDomain: bytes("realm"),
                                          .authenticationType: bytes("form")]
        try keychain.add(inet(base), data: secret("base"))
        for attribute in base.keys {
            var without = base
            without[attribute] = nil
            XCTAssertNoThrow(try keychain.add(inet(without), data: secret("x")), "\(attribute.longName) left out")
        }
    }

    func testLeftOutAttributeEqualsTheEmptyValue() throws {
        try addGenp("svc", nil)
        XCTAssertKeychainError(.duplicateItem, try addGenp("svc", ""))
        try addGenp(nil, nil)
        XCTAssertKeychainError(.duplicateItem, try addGenp("", ""))
        XCTAssertEqual(try allGenp().count, 2)
    }

    func testPortZeroIsTheEmptyPort() throws {
        try keychain.add(inet([.server: bytes("h")]), data: secret("a"))
        let zero = try AttributeValue.parse(.port, bytes("0"))
        XCTAssertKeychainError(.duplicateItem, try keychain.add(inet([.server: bytes("h"), .port: zero]), data: secret("b")))
    }

    func testPrimaryKeyFieldsAreNotSimplyConcatenated() throws {
        try addGenp("ab", "c")
        XCTAssertNoThrow(try addGenp("a", "bc"))
        XCTAssertNoThrow(try addGenp("abc", ""))
        XCTAssertNoThrow(try addGenp("", "abc"))
        XCTAssertEqual(try allGenp().count, 4)
    }

    func testSameKeyInAnotherAccessGroupIsDistinct() throws {
        try addGenp("svc", "alice", secret: "default group")
        try addGenp("svc", "alice", secret: "team group", group: "T.shared")
        XCTAssertKeychainError(.duplicateItem, try addGenp("svc", "alice", group: "T.shared"))
        XCTAssertKeychainError(.duplicateItem, try addGenp("svc", "alice", group: Keychain.defaultAccessGroup))
        XCTAssertEqual(try allGenp().map(\.accessGroup), [Keychain.defaultAccessGroup, "T.shared"])
    }

    func testGenericAndInternetPasswordsNeverCollide() throws {
        try addGenp(nil, "alice")
        XCTAssertNoThrow(try keychain.add(inet([.account: bytes("alice")]), data: secret("x")))
    }

    func testServiceIsCaseSensitiveInTheKey() throws {
        try addGenp("svc", "alice")
        XCTAssertNoThrow(try addGenp("SVC", "alice"))
        XCTAssertNoThrow(try addGenp("svc", "alice "))
    }

    func testProtectionClassIsNotPartOfTheKey() throws {
        try addGenp("svc", "alice", accessible: .whenUnlocked)
        XCTAssertKeychainError(.duplicateItem, try addGenp("svc", "alice", accessible: .afterFirstUnlock))
    }

    func testDuplicateAddLeavesTheOriginalExactlyAsItWas() throws {
        let original = try addGenp("svc", "alice", [.comment: "keep", .label: "mine"], secret: "first")
        tick()
        XCTAssertKeychainError(.duplicateItem, try addGenp("svc", "alice", [.comment: "other", .label: "theirs"], secret: "second"))
        let after = try keychain.search(query(ref: original.persistentRef), returnData: true)[0]
        XCTAssertEqual(after.attributes, original.attributes)
        XCTAssertEqual(after.creationDate, original.creationDate)
        XCTAssertEqual(after.modificationDate, original.modificationDate)
        XCTAssertEqual(after.secretString, "first")
    }

    func testADeletedKeyCanBeAddedAgainWithANewReference() throws {
        let first = try addGenp("svc", "alice")
        XCTAssertEqual(try keychain.delete(query(.genericPassword, [.service: "svc", .account: "alice"])), 1)
        let second = try addGenp("svc", "alice")
        XCTAssertNotEqual(first.persistentRef, second.persistentRef)
    }
}
