import LocketCore
import XCTest

/// SPEC §3: an attribute the item class does not support is an error
/// (errSecNoSuchAttr, -25303), never ignored, in every operation.
final class ForeignAttributeTests: KeychainTestCase {
    private let internetOnly: [Attribute] = [.server, .securityDomain, .protocol, .authenticationType, .port, .path]
    private let genericOnly: [Attribute] = [.service, .generic]

    private func sample(_ attribute: Attribute) -> [UInt8] {
        switch attribute {
        case .port: [1, 187]
        case .protocol: bytes("htps")
        case .authenticationType: bytes("dflt")
        default: bytes("x")
        }
    }

    private func foreign(_ itemClass: ItemClass) -> [Attribute] {
        itemClass == .genericPassword ? internetOnly : genericOnly
    }

    func testSupportTable() {
        for attribute in internetOnly {
            XCTAssertFalse(ItemClass.genericPassword.supports(attribute), attribute.longName)
            XCTAssertTrue(ItemClass.internetPassword.supports(attribute), attribute.longName)
        }
        for attribute in genericOnly {
            XCTAssertTrue(ItemClass.genericPassword.supports(attribute), attribute.longName)
            XCTAssertFalse(ItemClass.internetPassword.supports(attribute), attribute.longName)
        }
        for attribute: Attribute in [.account, .label, .description, .comment, .creator, .type, .accessGroup, .accessible] {
            XCTAssertTrue(ItemClass.genericPassword.supports(attribute), attribute.longName)
            XCTAssertTrue(ItemClass.internetPassword.supports(attribute), attribute.longName)
        }
        XCTAssertEqual(Set(ItemClass.genericPassword.primaryKey), [.service, .account])
        XCTAssertEqual(Set(ItemClass.internetPassword.primaryKey),
                       [.account, .securityDomain, .server, .protocol, .authenticationType, .port, .path])
    }

    func testNewItemRefusesForeignAttributes() {
        for itemClass in ItemClass.allCases {
            for attribute in foreign(itemClass) {
                var item = NewItem(itemClass: itemClass)
                XCTAssertKeychainError(.noSuchAttr, try item.set(attribute, sample(attribute)), "\(itemClass) \(attribute)")
                XCTAssertTrue(item.attributes.isEmpty, "nothing was set")
            }
        }
    }

    func testQueryRefusesForeignAttributesEvenEmpty() {
        for itemClass in ItemClass.allCases {
            for attribute in foreign(itemClass) {
                var q = Query(itemClass: itemClass)
                XCTAssertKeychainError(.noSuchAttr, try q.match(attribute, sample(attribute)), "\(itemClass) \(attribute)")
                XCTAssertKeychainError(.noSuchAttr, try q.match(attribute, []), "\(itemClass) \(attribute) empty")
                XCTAssertTrue(q.isEmpty)
            }
        }
    }

    func testUpdateRefusesForeignChangesAndChangesNothing() throws {
        try addGenp("svc", "alice", secret: "a")
        try keychain.add(inet([.server: bytes("example.com")]), data: secret("b"))
        for itemClass in ItemClass.allCases {
            for attribute in foreign(itemClass) {
                XCTAssertKeychainError(.noSuchAttr,
                                       try keychain.update(Query(itemClass: itemClass),
                                                           changes: [.comment: bytes("x"), attribute: sample(attribute)]),
                                       "\(itemClass) \(attribute)")
            }
        }
        XCTAssertEqual(try allGenp()[0].string(.comment), "")
        XCTAssertEqual(try keychain.search(Query(itemClass: .internetPassword))[0].string(.comment), "")
    }

    func testForeignChangeIsReportedEvenWithoutAMatch() throws {
        // The attribute is checked before the lookup: a misspelt update is a
        // usage error, not "not found".
        XCTAssertKeychainError(.noSuchAttr,
                               try keychain.update(Query(itemClass: .genericPassword), changes: [.server: bytes("x")]))
    }

    func testAccessibleIsAQueryAttribute() throws {
        // SPEC §4 (revised): kSecAttrAccessible is an ordinary query attribute.
        var q = Query(itemClass: .genericPassword)
        try q.match(.accessible, bytes("ak"))
        XCTAssertEqual(q.accessible, .whenUnlocked)
        XCTAssertFalse(q.isEmpty)
        XCTAssertKeychainError(.param, try q.match(.accessible, bytes("sometimes")))
    }

    func testAccessGroupAsAQueryAttributeScopesTheQuery() throws {
        var q = Query(itemClass: .genericPassword)
        try q.match(.accessGroup, bytes("T.shared"))
        XCTAssertEqual(q.accessGroup, "T.shared")
        XCTAssertFalse(q.isEmpty)
    }

    func testAccessGroupSetOnANewItemIsHonoured() throws {
        // NewItem.set accepts .accessGroup (every class supports it), so it must
        // either place the item in that group or refuse; it must not be dropped.
        var item = NewItem(itemClass: .genericPassword)
        try item.set(.service, bytes("svc"))
        do {
            try item.set(.accessGroup, bytes("T.shared"))
        } catch let error as KeychainError {
            XCTAssertEqual(error.code, .param)
            return
        }
        let added = try keychain.add(item, data: secret("x"))
        XCTAssertEqual(added.accessGroup, "T.shared", "NewItem.set(.accessGroup) was silently ignored")
    }

    func testAccessibleSetOnANewItemIsHonoured() throws {
        var item = NewItem(itemClass: .genericPassword)
        try item.set(.service, bytes("svc"))
        do {
            try item.set(.accessible, bytes(ProtectionClass.afterFirstUnlock.rawValue))
        } catch let error as KeychainError {
            XCTAssertEqual(error.code, .param)
            return
        }
        let added = try keychain.add(item, data: secret("x"))
        XCTAssertEqual(added.accessible, .afterFirstUnlock, "NewItem.set(.accessible) was silently ignored")
    }

    func testItemClassParsing() throws {
        for text in ["genp", "generic-password", "kSecClassGenericPassword"] {
            XCTAssertEqual(try ItemClass(parsing: text), .genericPassword)
        }
        for text in ["inet", "internet-password", "kSecClassInternetPassword"] {
            XCTAssertEqual(try ItemClass(parsing: text), .internetPassword)
        }
        for text in ["keys", "key", "kSecClassKey"] { XCTAssertEqual(try ItemClass(parsing: text), .key) }
        for text in ["cert", "certificate", "kSecClassCertificate"] { XCTAssertEqual(try ItemClass(parsing: text), .certificate) }
        // An identity is a view (Keychain.identities), not a class of stored items.
        for text in ["", "idnt", "identity", "GENP", "generic", "CERT"] {
            XCTAssertKeychainError(.noSuchClass, try ItemClass(parsing: text), text)
        }
    }

    func testErrorStatusIsApples() {
        XCTAssertEqual(KeychainError(.noSuchAttr).status, -25303)
        XCTAssertEqual(KeychainError(.noSuchClass).status, -25306)
        XCTAssertTrue(KeychainError(.noSuchAttr).description.hasSuffix("(errSecNoSuchAttr -25303)"))
    }
}
