import LocketCore
import XCTest

/// SPEC §4: a query is a class plus byte-exact equalities; left-out attributes
/// are wildcards; results are oldest first; find returns one unless asked.
final class QueryTests: KeychainTestCase {
    /// Run against a file keychain and a remote one (SPEC §17 conformance).
    override class var isConformanceSuite: Bool { true }

    private func addThree() throws -> [Item] {
        try ["one", "two", "three"].map { try addGenp("svc", $0, secret: $0) }
    }

    // MARK: - Match limits

    func testLimitOneReturnsTheOldestMatch() throws {
        _ = try addThree()
        let found = try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .one, returnData: true)
        XCTAssertEqual(found.map { $0.string(.account) }, ["one"])
        XCTAssertEqual(found[0].secretString, "one")
    }

    func testDefaultLimitIsOne() throws {
        _ = try addThree()
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.service: "svc"])).count, 1)
    }

    func testLimitCountReturnsTheOldestN() throws {
        _ = try addThree()
        let found = try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .count(2))
        XCTAssertEqual(found.map { $0.string(.account) }, ["one", "two"])
    }

    func testLimitCountLargerThanTheMatchesReturnsThemAll() throws {
        _ = try addThree()
        let found = try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .count(10))
        XCTAssertEqual(found.map { $0.string(.account) }, ["one", "two", "three"])
    }

    func testLimitAllReturnsEveryMatchOldestFirst() throws {
        let added = try addThree()
        let found = try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .all, returnData: true)
        XCTAssertEqual(found.map(\.persistentRef), added.map(\.persistentRef))
        XCTAssertEqual(found.map { $0.secretString ?? "" }, ["one", "two", "three"])
    }

    func testLimitAppliesAfterTheByteExactFilter() throws {
        try addGenp("svc", "a")
        try addGenp("other", "b")
        try addGenp("svc", "c")
        let found = try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .count(2))
        XCTAssertEqual(found.map { $0.string(.account) }, ["a", "c"])
    }

    // MARK: - Order

    func testOrderIsCreationOrderEvenAfterUpdates() throws {
        _ = try addThree()
        tick()
        try keychain.update(query(.genericPassword, [.account: "one"]), changes: [.comment: bytes("touched")])
        try keychain.update(query(.genericPassword, [.account: "two"]), changes: [.account: bytes("zwei")])
        let found = try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .all)
        XCTAssertEqual(found.map { $0.string(.account) }, ["one", "zwei", "three"])
        // The same query twice gives the same order.
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .all).map(\.persistentRef),
                       found.map(\.persistentRef))
    }

    func testAddUpdateExistingKeepsThePlaceInTheOrder() throws {
        _ = try addThree()
        try keychain.add(genp("svc", "one", [.comment: "again"]), data: secret("new"), updateExisting: true)
        let found = try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .all)
        XCTAssertEqual(found.map { $0.string(.account) }, ["one", "two", "three"])
    }

    // MARK: - Equality

    func testNoAttributeMatchesEveryItemOfTheClassOnly() throws {
        _ = try addThree()
        try keychain.add(inet([.server: bytes("example.com")]), data: secret("web"))
        XCTAssertEqual(try keychain.search(Query(itemClass: .genericPassword), limit: .all).count, 3)
        let web = try keychain.search(Query(itemClass: .internetPassword), limit: .all)
        XCTAssertEqual(web.count, 1)
        XCTAssertEqual(web[0].itemClass, .internetPassword)
    }

    func testLeftOutAttributeIsAWildcard() throws {
        try addGenp("svc", "alice", [.comment: "c1"])
        try addGenp("svc", "bob")
        try addGenp("svc", nil)
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .all).count, 3)
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.comment: "c1"]), limit: .all).map { $0.string(.account) },
                       ["alice"])
    }

    func testEmptyValueMatchesOnlyItemsWithTheEmptyValue() throws {
        try addGenp("svc", "alice")
        try addGenp("svc", nil, secret: "no account")
        try addGenp("svc", "bob")
        let found = try keychain.search(query(.genericPassword, [.account: ""]), limit: .all, returnData: true)
        XCTAssertEqual(found.count, 1)
        XCTAssertEqual(found[0].secretString, "no account")
        XCTAssertEqual(found[0][.account], [])
    }

    func testEmptyCommentMatchesItemsAddedWithoutOne() throws {
        try addGenp("svc", "alice")
        try addGenp("svc", "bob", [.comment: "x"])
        let found = try keychain.search(query(.genericPassword, [.comment: ""]), limit: .all)
        XCTAssertEqual(found.map { $0.string(.account) }, ["alice"])
    }

    func testEqualityIsByteExact() throws {
        try addGenp("svc", "alice")
        for near in ["Alice", "alic", "alice ", " alice", "alice\u{0}", "ALICE", "alicee"] {
            XCTAssertKeychainError(.itemNotFound, try keychain.search(query(.genericPassword, [.account: near])),
                                   "\(Array(near.utf8)) must not match alice")
        }
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.account: "alice"])).count, 1)
    }

    func testUnicodeIsComparedAsBytesNotCanonicalEquivalence() throws {
        let precomposed = "caf\u{e9}"
        let decomposed = "cafe\u{301}"
        XCTAssertEqual(precomposed, decomposed, "Swift strings call these equal; the keychain must not")
        try addGenp("svc", precomposed, secret: "nfc")
        XCTAssertNoThrow(try addGenp("svc", decomposed, secret: "nfd"), "different bytes are a different key")
        var q = Query(itemClass: .genericPassword)
        try q.match(.account, Array(decomposed.utf8))
        let found = try keychain.search(q, limit: .all, returnData: true)
        XCTAssertEqual(found.map { $0.secretString ?? "" }, ["nfd"])
    }

    func testBinaryGenericAttributeMatchesByteForByte() throws {
        var item = NewItem(itemClass: .genericPassword)
        try item.set(.service, bytes("bin"))
        try item.set(.generic, [0, 1, 0, 255])
        try keychain.add(item, data: secret("x"))
        var hit = Query(itemClass: .genericPassword)
        try hit.match(.generic, [0, 1, 0, 255])
        XCTAssertEqual(try keychain.search(hit)[0][.generic], [0, 1, 0, 255])
        var miss = Query(itemClass: .genericPassword)
        try miss.match(.generic, [0, 1, 0])
        XCTAssertKeychainError(.itemNotFound, try keychain.search(miss))
    }

    func testEveryGivenAttributeMustMatch() throws {
        try addGenp("svc", "alice", [.label: "L"])
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.service: "svc", .account: "alice", .label: "L"])).count, 1)
        XCTAssertKeychainError(.itemNotFound, try keychain.search(query(.genericPassword, [.service: "svc", .account: "bob"])))
        XCTAssertKeychainError(.itemNotFound,
                               try keychain.search(query(.genericPassword, [.service: "svc", .account: "alice", .label: "M"])))
    }

    func testMatchingTheSameAttributeTwiceKeepsTheLastValue() throws {
        try addGenp("svc", "alice")
        var q = Query(itemClass: .genericPassword)
        try q.match(.account, bytes("bob"))
        try q.match(.account, bytes("alice"))
        XCTAssertEqual(try keychain.search(q).count, 1)
    }

    func testNoMatchIsItemNotFoundNotAnEmptyResult() throws {
        XCTAssertKeychainError(.itemNotFound, try keychain.search(Query(itemClass: .genericPassword), limit: .all))
        try addGenp("svc", "alice")
        XCTAssertKeychainError(.itemNotFound, try keychain.search(query(.genericPassword, [.service: "nope"]), limit: .all))
    }

    func testInternetPasswordQueryByEveryAttribute() throws {
        let attributes: [Attribute: [UInt8]] = [
            .server: bytes("example.com"), .account: bytes("alice"), .protocol: try AttributeValue.parse(.protocol, bytes("https")),
            .port: try AttributeValue.parse(.port, bytes("8443")), .path: bytes("/login"), .securityDomain: bytes("realm"),
            .authenticationType: try AttributeValue.parse(.authenticationType, bytes("form")), .label: bytes("L"),
            .description: bytes("D"), .comment: bytes("C"), .creator: bytes("crtr"), .type: bytes("type"),
        ]
        try keychain.add(inet(attributes), data: secret("web"))
        try keychain.add(inet([.server: bytes("example.com"), .account: bytes("bob")]), data: secret("other"))
        for (attribute, value) in attributes {
            var q = Query(itemClass: .internetPassword)
            try q.match(attribute, value)
            let found = try keychain.search(q, limit: .all, returnData: true)
            if attribute == .server {
                XCTAssertEqual(found.count, 2)
            } else {
                XCTAssertEqual(found.map { $0.secretString ?? "" }, ["web"], attribute.longName)
            }
        }
    }

    // MARK: - References, groups, data

    func testPersistentReferenceFindsExactlyThatItem() throws {
        let added = try addThree()
        let found = try keychain.search(query(ref: added[1].persistentRef), returnData: true)
        XCTAssertEqual(found.count, 1)
        XCTAssertEqual(found[0].secretString, "two")
        XCTAssertEqual(Set(added.map(\.persistentRef)).count, 3, "references are unique")
        XCTAssertKeychainError(.itemNotFound, try keychain.search(query(ref: [UInt8](repeating: 7, count: 16))))
        XCTAssertKeychainError(.itemNotFound, try keychain.search(query(ref: added[1].persistentRef, .internetPassword)),
                               "a reference does not cross item classes")
    }

    func testReferenceCombinesWithAttributes() throws {
        let added = try addThree()
        var q = query(ref: added[0].persistentRef)
        try q.match(.account, bytes("two"))
        XCTAssertKeychainError(.itemNotFound, try keychain.search(q))
    }

    func testAccessGroupScopesTheQuery() throws {
        try addGenp("svc", "alice", secret: "default")
        try addGenp("svc", "alice", secret: "team", group: "T.shared")
        let team = try keychain.search(query(.genericPassword, [.service: "svc"], group: "T.shared"), limit: .all, returnData: true)
        XCTAssertEqual(team.map { $0.secretString ?? "" }, ["team"])
        XCTAssertEqual(team[0].accessGroup, "T.shared")
        var byAttribute = Query(itemClass: .genericPassword)
        try byAttribute.match(.accessGroup, bytes("T.shared"))
        XCTAssertEqual(try keychain.search(byAttribute, limit: .all).count, 1)
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .all).count, 2)
        XCTAssertKeychainError(.itemNotFound, try keychain.search(query(.genericPassword, [:], group: "nobody")))
    }

    func testDataIsReturnedOnlyWhenAskedFor() throws {
        try addGenp("svc", "alice", secret: "hunter2")
        XCTAssertNil(try keychain.search(query(.genericPassword, [.service: "svc"]))[0].data)
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.service: "svc"]), returnData: true)[0].secretString, "hunter2")
    }

    func testFoundItemsCarryTheirAttributesAndMetadata() throws {
        let added = try addGenp("svc", "alice", [.comment: "c", .generic: "g"], accessible: .afterFirstUnlock)
        let found = try keychain.search(query(.genericPassword, [.service: "svc"]))[0]
        XCTAssertEqual(found.itemClass, .genericPassword)
        XCTAssertEqual(found.string(.service), "svc")
        XCTAssertEqual(found.string(.account), "alice")
        XCTAssertEqual(found.string(.comment), "c")
        XCTAssertEqual(found.string(.generic), "g")
        XCTAssertEqual(found.accessible, .afterFirstUnlock)
        XCTAssertEqual(found.accessGroup, Keychain.defaultAccessGroup)
        XCTAssertEqual(found.availability, .available)
        XCTAssertEqual(found.persistentRef, added.persistentRef)
        XCTAssertEqual(found.creationDate, added.creationDate)
        XCTAssertEqual(found.modificationDate, found.creationDate)
        XCTAssertGreaterThan(found.creationDate, 1_600_000_000_000, "milliseconds since 1970")
    }

    // MARK: - Label default (SPEC §3)

    func testLabelDefaultsToTheServiceOrTheServer() throws {
        let g = try addGenp("svc", "alice")
        XCTAssertEqual(g.string(.label), "svc")
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.label: "svc"])).count, 1)
        let i = try keychain.add(inet([.server: bytes("example.com")]), data: secret("x"))
        XCTAssertEqual(i.string(.label), "example.com")
        var q = Query(itemClass: .internetPassword)
        try q.match(.label, bytes("example.com"))
        XCTAssertEqual(try keychain.search(q).count, 1)
    }

    func testExplicitLabelIsKept() throws {
        let g = try addGenp("svc", "alice", [.label: "Mine"])
        XCTAssertEqual(g.string(.label), "Mine")
        XCTAssertKeychainError(.itemNotFound, try keychain.search(query(.genericPassword, [.label: "svc"])))
    }

    // MARK: - Delete

    func testDeleteRemovesEveryMatchAndOnlyThem() throws {
        _ = try addThree()
        try addGenp("other", "x")
        XCTAssertEqual(try keychain.delete(query(.genericPassword, [.service: "svc"])), 3)
        XCTAssertEqual(try allGenp().map { $0.string(.service) }, ["other"])
        XCTAssertKeychainError(.itemNotFound, try keychain.delete(query(.genericPassword, [.service: "svc"])))
    }

    func testDeleteIsByteExactToo() throws {
        try addGenp("svc", "alice")
        XCTAssertKeychainError(.itemNotFound, try keychain.delete(query(.genericPassword, [.account: "Alice"])))
        XCTAssertKeychainError(.itemNotFound, try keychain.delete(query(.genericPassword, [.account: ""])))
        XCTAssertEqual(try allGenp().count, 1)
    }

    func testDeleteByReference() throws {
        let added = try addThree()
        XCTAssertEqual(try keychain.delete(query(ref: added[1].persistentRef)), 1)
        XCTAssertEqual(try allGenp().map { $0.string(.account) }, ["one", "three"])
    }

    // MARK: - Dump

    func testDumpStreamsEveryItemOfEveryClassOldestFirst() throws {
        try addGenp("svc", "one", secret: "1")
        try keychain.add(inet([.server: bytes("example.com")]), data: secret("2"))
        try addGenp("svc", "three", secret: "3", group: "T.shared")
        var seen: [(ItemClass, String?)] = []
        try keychain.dump(returnData: true) { seen.append(($0.itemClass, $0.secretString)) }
        XCTAssertEqual(seen.map(\.0), [.genericPassword, .internetPassword, .genericPassword])
        XCTAssertEqual(seen.map(\.1), ["1", "2", "3"])
    }
}

/// Match limits outside what SecItemCopyMatching accepts.
final class MatchLimitValidationTests: KeychainTestCase {
    func testCountBelowOneIsAParameterError() throws {
        try addGenp("svc", "one")
        try addGenp("svc", "two")
        // count(0) must not return one item, nor count(-1) every item.
        XCTAssertKeychainError(.param, try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .count(0)))
        XCTAssertKeychainError(.param, try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .count(-1)))
    }

    func testCountOneIsTheSameAsOne() throws {
        try addGenp("svc", "one")
        try addGenp("svc", "two")
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.service: "svc"]), limit: .count(1)).map { $0.string(.account) },
                       ["one"])
    }
}
