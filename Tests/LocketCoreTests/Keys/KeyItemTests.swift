import Foundation
@testable import LocketCore
import XCTest

// Keys and certificates as items (SPEC §12), in the engine: one file in one
// transaction, derived attributes, identities as a view, non-extractable
// keys, uniqueness, locking and access groups. Fixtures by openssl at test time.
final class KeyItemTests: KeychainTestCase {
    // A KeychainTestCase, so the fixture is KeysTestCase's by hand.
    override class func setUp() {
        super.setUp()
        KeysFixture.make(for: self) { fixture in
            try fixture.genpkey("p256", "leaf.key")
            try fixture.makeLeaf(key: "leaf.key", cert: "leaf.pem", cn: "leaf.example.com")
            // The same key re-issued: a new serial, the same public key hash.
            try fixture.makeLeaf(key: "leaf.key", cert: "renewed.pem", cn: "leaf.example.com")
        }
    }

    override class func tearDown() {
        KeysFixture.remove(for: self)
        super.tearDown()
    }

    var f: KeysFixture { KeysFixture.of(type(of: self)) }

    /// The parsed PEM of the named files, concatenated.
    func file(_ names: String...) throws -> ImportedItems {
        try KeyImport.parse(names.flatMap { (try? f.read($0)) ?? [] }, passphrase: noPassphrase)
    }

    func count(_ itemClass: ItemClass) throws -> Int {
        do { return try keychain.search(Query(itemClass: itemClass), limit: .all).count } catch let e as KeychainError where e.code == .itemNotFound { return 0 }
    }

    func testKeyFileAddsKeyAndCertificateWithDerivedAttributes() throws {
        var seen: [KeyFileOutcome] = []
        var options = KeyItemOptions()
        options.tag = bytes("com.example.leaf")
        try keychain.keys.addKeyFile(try file("leaf.key", "leaf.pem"), options: options) { seen.append($0) }
        XCTAssertEqual(seen.map(\.item.itemClass), [.key, .certificate])
        XCTAssertTrue(seen.allSatisfy(\.added))

        var byTag = Query(itemClass: .key)
        try byTag.match(.applicationTag, bytes("com.example.leaf"))
        let key = try keychain.search(byTag)[0]
        let certificate = try keychain.search(Query(itemClass: .certificate))[0]
        XCTAssertEqual(key.string(.keyClass), "private")
        XCTAssertEqual(key.string(.type), "ec")
        XCTAssertEqual(key.string(.keySize), "256")
        XCTAssertEqual(key.string(.canSign), "1")
        XCTAssertEqual(key.string(.extractable), "1")
        XCTAssertEqual(key.string(.label), "leaf.example.com", "the key takes its certificate's label")
        // klbl == pkhh == SHA-1 of the public key as openssl cuts it out.
        let external = try f.opensslExternalRepresentation("leaf.key", rsa: false)
        try f.write("leaf.point", external)
        XCTAssertEqual(key[.applicationLabel], try f.opensslSHA1("leaf.point"))
        XCTAssertEqual(certificate[.publicKeyHash], key[.applicationLabel])
        XCTAssertEqual(certificate.string(.label), "leaf.example.com")
        XCTAssertEqual(certificate.string(.alias), "leaf@example.com")
        XCTAssertTrue(certificate.string(.subjectName).contains("CN=leaf.example.com"))

        var byHash = Query(itemClass: .certificate)
        let printed = try Tools.must("openssl", ["x509", "-in", f.path("leaf.pem"), "-noout", "-fingerprint", "-sha256"]).text
        try byHash.match(.fingerprint, [UInt8](hex: String(printed.split(separator: "=")[1]).lowercased()))
        XCTAssertEqual(try keychain.search(byHash).count, 1)
    }

    func testOneTransactionPerFileAFailureOnTheLastItemAddsNothing() throws {
        struct Injected: Error {}
        var n = 0
        XCTAssertThrowsError(try keychain.keys.addKeyFile(try file("leaf.key", "leaf.pem", "ca.pem")) { _ in
            n += 1
            if n == 3 { throw Injected() }
        })
        XCTAssertEqual(n, 3)
        XCTAssertEqual(try count(.key), 0)
        XCTAssertEqual(try count(.certificate), 0)
    }

    func testSameCertificateTwiceIsDuplicateAndARenewedOneIsASecondItemSharingTheKey() throws {
        try keychain.keys.addKeyFile(try file("leaf.key", "leaf.pem"))
        XCTAssertKeychainError(.duplicateItem, try keychain.keys.addKeyFile(try file("leaf.pem")))
        XCTAssertKeychainError(.duplicateItem, try keychain.keys.addKeyFile(try file("leaf.key", "leaf.pem")))
        var outcomes: [Bool] = []
        try keychain.keys.addKeyFile(try file("leaf.key", "renewed.pem")) { outcomes.append($0.added) }
        XCTAssertEqual(outcomes, [false, true], "the key was there, the renewed certificate is new")
        XCTAssertEqual(try count(.certificate), 2)
        XCTAssertEqual(try count(.key), 1)
        XCTAssertEqual(try keychain.keys.identities(IdentityQuery(), limit: .all).count, 2)
    }

    func testIdentityFormsFromEitherHalfAndDeletionKeepsASharedKey() throws {
        XCTAssertKeychainError(.itemNotFound, try keychain.keys.identities(IdentityQuery()))
        try keychain.keys.addKeyFile(try file("leaf.pem"))
        XCTAssertKeychainError(.itemNotFound, try keychain.keys.identities(IdentityQuery()))
        try keychain.keys.addKeyFile(try file("leaf.key"))
        XCTAssertEqual(try keychain.keys.identities(IdentityQuery()).count, 1, "adding the key formed the identity")
        try keychain.keys.addKeyFile(try file("renewed.pem"))

        var first = IdentityQuery()
        try first.match(.serialNumber, try Certificate(der: try KeyImport.parse(try f.read("leaf.pem"), passphrase: noPassphrase).certificates[0].certificate.der).serialNumber)
        let deleted = try keychain.keys.deleteIdentities(first)
        XCTAssertEqual(deleted.certificates, 1)
        XCTAssertEqual(deleted.keys, 0, "the renewed certificate still pairs with the key")
        XCTAssertEqual(try count(.key), 1)
        XCTAssertEqual(try keychain.keys.deleteIdentities(IdentityQuery()).keys, 1)
        XCTAssertEqual(try count(.key), 0)
        XCTAssertEqual(try count(.certificate), 0)
    }

    func testNonExtractableKeyRefusesItsValueButOpensForUse() throws {
        var options = KeyItemOptions()
        options.extractable = false
        try keychain.keys.addKeyFile(try file("leaf.key", "leaf.pem"), options: options)
        XCTAssertKeychainError(.dataNotAvailable, try keychain.search(Query(itemClass: .key), returnData: true))
        XCTAssertKeychainError(.dataNotAvailable, try keychain.keys.exportableKey(Query(itemClass: .key)))
        XCTAssertKeychainError(.dataNotAvailable, try keychain.keys.exportableIdentity(IdentityQuery()))
        XCTAssertEqual(try keychain.search(Query(itemClass: .key))[0].string(.extractable), "0")
        var listed: [Item] = []
        try keychain.dump(returnData: true) { listed.append($0) }
        XCTAssertNil(listed.first { $0.itemClass == .key }?.data, "dump lists it without its value")
        XCTAssertNotNil(listed.first { $0.itemClass == .certificate }?.data)
        let (_, stored) = try keychain.keys.storedKey(Query(itemClass: .key))
        guard case .software(let key) = stored else { return XCTFail("a key imported from a file is a software key") }
        let signature = try key.sign(bytes("message"), algorithm: key.algorithms(for: .sign)[0])
        XCTAssertTrue(try keychain.keys.publicKey(Query(itemClass: .key)).key.verify(signature: signature, for: bytes("message"), algorithm: key.algorithms(for: .sign)[0]))
        XCTAssertKeychainError(.readOnlyAttr, try keychain.update(Query(itemClass: .key), changes: [.extractable: bytes("1")]))
    }

    func testDerivedAttributesAreReadOnlyAndLabelTagCommentChange() throws {
        try keychain.keys.addKeyFile(try file("leaf.key", "leaf.pem"))
        for attribute: Attribute in [.applicationLabel, .keyClass, .type, .keySize] {
            XCTAssertKeychainError(.readOnlyAttr, try keychain.update(Query(itemClass: .key), changes: [attribute: bytes("1")]))
        }
        for attribute: Attribute in [.publicKeyHash, .subject, .serialNumber, .fingerprint, .alias] {
            XCTAssertKeychainError(.readOnlyAttr, try keychain.update(Query(itemClass: .certificate), changes: [attribute: bytes("1")]))
        }
        XCTAssertKeychainError(.noSuchAttr, try keychain.update(Query(itemClass: .certificate), changes: [.applicationTag: bytes("x")]))
        XCTAssertKeychainError(.param, try keychain.update(Query(itemClass: .key), changes: [:], data: secret("other")))
        try keychain.update(Query(itemClass: .key), changes: [.label: bytes("L"), .applicationTag: bytes("T"), .comment: bytes("C")])
        let key = try keychain.search(Query(itemClass: .key))[0]
        XCTAssertEqual([key.string(.label), key.string(.applicationTag), key.string(.comment)], ["L", "T", "C"])
        XCTAssertKeychainError(.param, try keychain.add(NewItem(itemClass: .key), data: secret("x")))
    }

    func testKeysLockAsPasswordsAndStayInTheirAccessGroup() throws {
        var options = KeyItemOptions()
        options.accessGroup = "T.a"
        try keychain.keys.addKeyFile(try file("leaf.key", "leaf.pem"), options: options)
        let b = try temporary.open(caller: .app(try Entitlements.parse(bytes(#"{"keychain-access-groups": ["T.b"]}"#), name: "b.json")))
        XCTAssertKeychainError(.itemNotFound, try b.search(Query(itemClass: .key)))
        XCTAssertKeychainError(.itemNotFound, try b.keys.identities(IdentityQuery()))
        XCTAssertKeychainError(.missingEntitlement, try b.keys.addKeyFile(try file("leaf.key"), options: options))
        try temporary.lock(all: false)
        let locked = try temporary.open()
        XCTAssertKeychainError(.interactionNotAllowed, try locked.search(Query(itemClass: .key)))
        XCTAssertKeychainError(.interactionNotAllowed, try locked.keys.identities(IdentityQuery()))
        XCTAssertKeychainError(.interactionNotAllowed, try locked.keys.generateKey(.ed25519))
    }

    func testGeneratedKeyIsStoredAndItsPublicKeyReturned() throws {
        for type in KeyGenerationType.allCases where !type.rawValue.hasPrefix("rsa") || type == .rsa2048 {
            var options = KeyItemOptions()
            options.tag = bytes("gen.\(type.rawValue)")
            let (item, publicKey) = try keychain.keys.generateKey(type, options: options)
            XCTAssertEqual(item.string(.type), type.keyType.rawValue)
            XCTAssertEqual(item.string(.keySize), String(type.sizeInBits))
            var q = Query(itemClass: .key)
            try q.match(.applicationTag, bytes("gen.\(type.rawValue)"))
            XCTAssertEqual(try keychain.keys.publicKey(q).key.subjectPublicKeyInfo, publicKey.subjectPublicKeyInfo)
            XCTAssertEqual(item[.applicationLabel], publicKey.applicationLabel)
        }
    }
}
