import Foundation
import LocketCore
import LocketTestSupport
import Security
import XCTest

/// Issue 37: where Apple's documented behaviour and locket's earlier rules
/// differed, Apple's (SPEC §4, §19), each pinned by what wrappers in the
/// wild rely on (shared/compat's libraries).
final class AppleSemanticsTests: SecurityTestCase {
    private func item(_ account: String, _ more: [String: Any] = [:]) -> [String: Any] {
        var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc",
                                    kSecAttrAccount as String: account]
        for (key, value) in more { query[key] = value }
        return query
    }

    private func add(_ account: String, _ secret: String = "s3cret", _ more: [String: Any] = [:]) -> OSStatus {
        var query = item(account, more)
        query[kSecValueData as String] = Data(secret.utf8)
        return SecItemAdd(query as CFDictionary, nil)
    }

    /// The secret of the one match of `query`, or the status.
    private func secret(_ query: [String: Any]) -> (OSStatus, String?) {
        var query = query
        query[kSecReturnData as String] = true
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        return (status, (result as? Data).map { String(decoding: $0, as: UTF8.self) })
    }

    /// Every match's attributes.
    private func all(_ query: [String: Any]) -> [[String: Any]] {
        var query = query
        query[kSecReturnAttributes as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitAll
        var result: CFTypeRef?
        guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess else { return [] }
        return result as? [[String: Any]] ?? []
    }

    // MARK: - kSecAttrAccessible, an ordinary attribute

    /// Apple: the protection class is searchable like any attribute; most
    /// wrappers put it in every query (KeychainAccess, keychain-swift).
    func testAccessibleIsAQueryTerm() throws {
        XCTAssertEqual(add("a", "A", [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock]), errSecSuccess)
        XCTAssertEqual(add("b", "B", [kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked]), errSecSuccess)
        let afterFirstUnlock = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock]
        XCTAssertEqual(all(afterFirstUnlock).map { $0[kSecAttrAccount as String] as? String }, ["a"])
        XCTAssertEqual(secret(item("a", [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock])).1, "A")
        XCTAssertEqual(secret(item("a", [kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked])).0, errSecItemNotFound)
        // A term of a delete too: the when-unlocked item goes, the other stays.
        XCTAssertEqual(SecItemDelete([kSecClass: kSecClassGenericPassword, kSecAttrAccessible: kSecAttrAccessibleWhenUnlocked] as CFDictionary),
                       errSecSuccess)
        XCTAssertEqual(all([kSecClass as String: kSecClassGenericPassword]).map { $0[kSecAttrAccount as String] as? String }, ["a"])
    }

    /// Apple: SecItemUpdate changes the class; the item is sealed again
    /// under the new class's key in the same transaction.
    func testUpdateChangesTheProtectionClassAndSealsTheItemUnderIt() throws {
        XCTAssertEqual(add("a", "A", [kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked]), errSecSuccess)
        XCTAssertEqual(SecItemUpdate(item("a") as CFDictionary, [kSecAttrAccessible: kSecAttrAccessibleAfterFirstUnlock] as CFDictionary),
                       errSecSuccess)
        XCTAssertEqual(all(item("a")).first?[kSecAttrAccessible as String] as? String, kSecAttrAccessibleAfterFirstUnlock as String)
        // Sealed under after-first-unlock's key: it still opens once `lock` forgot the when-unlocked keys.
        try lock()
        XCTAssertEqual(secret(item("a")).1, "A")
        // Back to when-unlocked needs that class's key: not available, nothing changes.
        XCTAssertEqual(SecItemUpdate(item("a") as CFDictionary, [kSecAttrAccessible: kSecAttrAccessibleWhenUnlocked] as CFDictionary),
                       errSecInteractionNotAllowed)
        XCTAssertEqual(secret(item("a")).1, "A")
        try unlock()
        // With the secret in the same update, and the unchanged value as KeychainAccess sends it.
        let changes = [kSecAttrAccessible: kSecAttrAccessibleWhenUnlocked, kSecValueData: Data("A2".utf8), kSecAttrSynchronizable: false] as CFDictionary
        XCTAssertEqual(SecItemUpdate(item("a", [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]) as CFDictionary, changes), errSecSuccess)
        try lock()
        XCTAssertEqual(secret(item("a")).0, errSecInteractionNotAllowed)
        try unlock()
        XCTAssertEqual(secret(item("a")).1, "A2")
    }

    // MARK: - kSecAttrSynchronizable, stored and matched as Apple's

    /// Apple: "if the key is not supplied, or has a value of kCFBooleanFalse,
    /// then no synchronizable items will be added or returned";
    /// kSecAttrSynchronizableAny returns both. It is part of the primary key.
    func testSynchronizableIsStoredAndMatchedAsApplesIs() throws {
        XCTAssertEqual(add("u", "plain"), errSecSuccess)
        XCTAssertEqual(add("u", "synced", [kSecAttrSynchronizable as String: kCFBooleanTrue!]), errSecSuccess, "another item: sync is in the primary key")
        XCTAssertEqual(add("u", "again", [kSecAttrSynchronizable as String: true]), errSecDuplicateItem)
        // Whether it may leave the device stays its class's: stored as asked, as on iOS.
        XCTAssertEqual(add("t", "device", [kSecAttrSynchronizable as String: true,
                                           kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlockedThisDeviceOnly]), errSecSuccess)
        XCTAssertEqual(secret(item("u")).1, "plain", "not given: only items that are not synchronizable")
        XCTAssertEqual(secret(item("u", [kSecAttrSynchronizable as String: false])).1, "plain")
        XCTAssertEqual(secret(item("u", [kSecAttrSynchronizable as String: true])).1, "synced")
        XCTAssertEqual(secret(item("t")).0, errSecItemNotFound)
        let any: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]
        XCTAssertEqual(all(any).map { $0[kSecAttrSynchronizable as String] as? Bool }, [false, true, true])
        XCTAssertEqual(all(any).map { $0[kSecAttrAccount as String] as? String }, ["u", "u", "t"])
        XCTAssertEqual(all([kSecClass as String: kSecClassGenericPassword]).count, 1)
        // A delete without the key leaves the synchronizable items, even while locked.
        try lock()
        XCTAssertEqual(SecItemDelete(item("u") as CFDictionary), errSecSuccess)
        try unlock()
        XCTAssertEqual(all(any).map { $0[kSecAttrSynchronizable as String] as? Bool }, [true, true])
        XCTAssertEqual(SecItemDelete(any as CFDictionary), errSecSuccess)
        XCTAssertEqual(all(any).count, 0)
    }

    /// KeychainAccess's `set` on an existing key: its update query says
    /// kSecAttrSynchronizableAny, its attributes kSecAttrSynchronizable.
    func testUpdateChangesSynchronizable() throws {
        XCTAssertEqual(add("u", "plain"), errSecSuccess)
        XCTAssertEqual(SecItemUpdate(item("u", [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]) as CFDictionary,
                                     [kSecAttrSynchronizable: true, kSecValueData: Data("synced".utf8)] as CFDictionary), errSecSuccess)
        XCTAssertEqual(secret(item("u")).0, errSecItemNotFound)
        XCTAssertEqual(secret(item("u", [kSecAttrSynchronizable as String: true])).1, "synced")
        // Made a twin of an item that exists: errSecDuplicateItem, nothing changes.
        XCTAssertEqual(add("u", "plain again"), errSecSuccess)
        XCTAssertEqual(SecItemUpdate(item("u") as CFDictionary, [kSecAttrSynchronizable: true] as CFDictionary), errSecDuplicateItem)
        XCTAssertEqual(secret(item("u")).1, "plain again")
    }

    // MARK: - kSecReturnRef on passwords, answered as Apple's

    /// Apple makes no object of a password: asked alone the result is
    /// nothing (success); with other return types, a dictionary without
    /// kSecValueRef and with the secret it read for it. SecItemDelete
    /// ignores return types.
    func testReturnRefOnAPasswordIsAnsweredAsApplesIs() throws {
        XCTAssertEqual(add("a", "A"), errSecSuccess)
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(item("a", [kSecReturnRef as String: true]) as CFDictionary, &result), errSecSuccess)
        XCTAssertNil(result)
        XCTAssertEqual(SecItemCopyMatching(item("a", [kSecReturnRef as String: true, kSecMatchLimit as String: kSecMatchLimitAll]) as CFDictionary,
                                           &result), errSecSuccess)
        XCTAssertEqual((result as? [Any])?.count, 0)
        XCTAssertEqual(SecItemCopyMatching(item("a", [kSecReturnRef as String: true, kSecReturnAttributes as String: true,
                                                      kSecReturnPersistentRef as String: true]) as CFDictionary, &result), errSecSuccess)
        let attributes = try XCTUnwrap(result as? [String: Any])
        XCTAssertNil(attributes[kSecValueRef as String])
        XCTAssertEqual(attributes[kSecValueData as String] as? Data, Data("A".utf8))
        XCTAssertNotNil(attributes[kSecValuePersistentRef as String] as? Data)
        XCTAssertEqual(attributes[kSecAttrAccount as String] as? String, "a")
        XCTAssertEqual(SecItemCopyMatching(item("none", [kSecReturnRef as String: true]) as CFDictionary, &result), errSecItemNotFound)
        XCTAssertEqual(SecItemAdd(item("b", [kSecReturnRef as String: true, kSecValueData as String: Data()]) as CFDictionary, &result),
                       errSecSuccess)
        XCTAssertNil(result)
        XCTAssertEqual(SecItemDelete(item("a", [kSecReturnRef as String: true, kSecReturnData as String: true]) as CFDictionary), errSecSuccess)
        XCTAssertEqual(secret(item("a")).0, errSecItemNotFound)
    }

    // MARK: - Values read back as stored

    /// Apple gives back what was stored: an account stored as Data reads
    /// back as Data, one stored as a String as a String.
    func testAnAccountStoredAsDataReadsBackAsData() throws {
        let bytes = Data([0x61, 0x62, 0x63])
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassGenericPassword, kSecAttrService: "svc", kSecAttrAccount: bytes,
                                   kSecValueData: Data("x".utf8)] as CFDictionary, nil), errSecSuccess)
        XCTAssertEqual(add("text"), errSecSuccess)
        var accounts = all([kSecClass as String: kSecClassGenericPassword]).map { $0[kSecAttrAccount as String] }
        XCTAssertEqual(accounts.first as? Data, bytes)
        XCTAssertNil(accounts.first as? String)
        XCTAssertEqual(accounts.last as? String, "text")
        // Matched by its bytes, given either way.
        XCTAssertEqual(secret(item("abc")).1, "x")
        // Changed to a String, it reads back as one; the service, given as a String, stays one.
        XCTAssertEqual(SecItemUpdate([kSecClass: kSecClassGenericPassword, kSecAttrAccount: bytes] as CFDictionary,
                                     [kSecAttrAccount: "abd"] as CFDictionary), errSecSuccess)
        accounts = all([kSecClass as String: kSecClassGenericPassword]).map { $0[kSecAttrAccount as String] }
        XCTAssertEqual(accounts.first as? String, "abd")
        XCTAssertEqual(all([kSecClass as String: kSecClassGenericPassword]).first?[kSecAttrService as String] as? String, "svc")
        // And back to Data.
        XCTAssertEqual(SecItemUpdate(item("abd") as CFDictionary, [kSecAttrAccount: bytes] as CFDictionary), errSecSuccess)
        XCTAssertEqual(all([kSecClass as String: kSecClassGenericPassword]).first?[kSecAttrAccount as String] as? Data, bytes)
    }

    /// What Apple's SecKey supports and libcrypto does (issue 37): RSA-1024
    /// made, an RSA key of 1023 bits opened, raw RSA, and ECIES without the
    /// variable IV; what stays refused says so (SecKeyIsAlgorithmSupported false).
    func testTheKeysAndAlgorithmsAppleSupports() throws {
        var error: Unmanaged<CFError>?
        let rsa1024 = try XCTUnwrap(SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits: 1024] as CFDictionary, &error))
        XCTAssertEqual(SecKeyGetBlockSize(rsa1024), 128)

        let pem = sandbox.root + "/rsa1023.pem", der = sandbox.root + "/rsa1023.der"
        for arguments in [["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1023", "-out", pem],
                          ["rsa", "-in", pem, "-traditional", "-outform", "DER", "-out", der]] {
            let run = Spawn.run("/usr/bin/openssl", arguments, environment: sandbox.environment, input: .devNull, timeout: 60)
            XCTAssertEqual(run.status, 0, run.summary)
        }
        let pkcs1 = try Data(contentsOf: URL(fileURLWithPath: der))
        let rsa1023 = try XCTUnwrap(SecKeyCreateWithData(pkcs1 as CFData, [kSecAttrKeyType: kSecAttrKeyTypeRSA,
                                                                           kSecAttrKeyClass: kSecAttrKeyClassPrivate] as CFDictionary, &error))
        XCTAssertEqual(SecKeyGetBlockSize(rsa1023), 128)
        XCTAssertEqual(SecKeyCopyAttributes(rsa1023).map { ($0 as! [String: Any])[kSecAttrKeySizeInBits as String] as? Int }, 1023)
        let rsaPublic = try XCTUnwrap(SecKeyCopyPublicKey(rsa1023))
        for (key, publicKey) in [(rsa1023, rsaPublic), (rsa1024, try XCTUnwrap(SecKeyCopyPublicKey(rsa1024)))] {
            XCTAssertTrue(SecKeyIsAlgorithmSupported(publicKey, .encrypt, .rsaEncryptionRaw))
            let sealed = try XCTUnwrap(SecKeyCreateEncryptedData(publicKey, .rsaEncryptionRaw, Data([1, 2, 3]) as CFData, &error) as Data?)
            XCTAssertEqual(sealed.count, 128)
            let opened = try XCTUnwrap(SecKeyCreateDecryptedData(key, .rsaEncryptionRaw, sealed as CFData, &error) as Data?)
            XCTAssertEqual(opened, Data(repeating: 0, count: 125) + Data([1, 2, 3]), "the whole block, as Apple's")
        }

        let ec = try XCTUnwrap(SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256] as CFDictionary, &error))
        let ecPublic = try XCTUnwrap(SecKeyCopyPublicKey(ec))
        for algorithm: SecKeyAlgorithm in [.eciesEncryptionStandardX963SHA256AESGCM, .eciesEncryptionCofactorX963SHA256AESGCM,
                                           .eciesEncryptionStandardVariableIVX963SHA256AESGCM, .eciesEncryptionCofactorVariableIVX963SHA256AESGCM] {
            XCTAssertTrue(SecKeyIsAlgorithmSupported(ecPublic, .encrypt, algorithm), "\(algorithm.rawValue)")
            let sealed = try XCTUnwrap(SecKeyCreateEncryptedData(ecPublic, algorithm, Data("ecies".utf8) as CFData, &error))
            XCTAssertEqual(SecKeyCreateDecryptedData(ec, algorithm, sealed, &error) as Data?, Data("ecies".utf8))
        }
        // Known by name, refused, and SecKeyIsAlgorithmSupported says so.
        XCTAssertFalse(SecKeyIsAlgorithmSupported(ecPublic, .encrypt, .eciesEncryptionStandardX963SHA384AESGCM))
        XCTAssertNil(SecKeyCreateEncryptedData(ecPublic, .eciesEncryptionStandardX963SHA384AESGCM, Data("x".utf8) as CFData, &error))
        XCTAssertEqual(CFErrorGetCode(try XCTUnwrap(error?.takeRetainedValue())), Int(errSecParam))
    }
}
