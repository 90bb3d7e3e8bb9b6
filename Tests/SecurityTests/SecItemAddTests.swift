import Foundation
import LocketCore
import Security
import XCTest

/// SecItemAdd, as Apple documents it: adds one item; its result is what the
/// kSecReturn keys ask for; every error path SPEC §19 names.
final class SecItemAddTests: SecurityTestCase {
    private func password(_ account: String, service: String = "svc", _ more: [String: Any] = [:]) -> [String: Any] {
        var item: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                                   kSecAttrAccount as String: account, kSecValueData as String: Data("secret-\(account)".utf8)]
        item.merge(more) { $1 }
        return item
    }

    func testAddingReturnsWhatIsAskedFor() throws {
        var result: CFTypeRef?
        XCTAssertEqual(SecItemAdd(password("a", [kSecReturnPersistentRef as String: true]) as CFDictionary, &result), errSecSuccess)
        let ref = try XCTUnwrap(result as? Data)
        XCTAssertEqual(ref.count, 32, "the 32 hexadecimal digits of locket --ref")
        XCTAssertNotNil(String(data: ref, encoding: .utf8).flatMap { Int($0.prefix(8), radix: 16) })

        XCTAssertEqual(SecItemAdd(password("b", [kSecReturnAttributes as String: true, kSecReturnData as String: true]) as CFDictionary, &result),
                       errSecSuccess)
        let attributes = try XCTUnwrap(result as? [String: Any])
        XCTAssertEqual(attributes[kSecAttrAccount as String] as? String, "b")
        XCTAssertEqual(attributes[kSecValueData as String] as? Data, Data("secret-b".utf8))
        XCTAssertEqual(attributes[kSecAttrAccessGroup as String] as? String, "default", "the owner's default group")
        XCTAssertEqual(attributes[kSecAttrAccessible as String] as? String, kSecAttrAccessibleWhenUnlocked as String)
        XCTAssertEqual(attributes[kSecAttrLabel as String] as? String, "svc", "the label defaults to the service")

        XCTAssertEqual(SecItemAdd(password("c") as CFDictionary, &result), errSecSuccess)
        XCTAssertNil(result, "nothing asked, nothing returned")
    }

    func testADuplicatePrimaryKeyIsDuplicateItemWhateverElseDiffers() {
        XCTAssertEqual(SecItemAdd(password("a") as CFDictionary, nil), errSecSuccess)
        XCTAssertEqual(SecItemAdd(password("a", [kSecAttrComment as String: "other"]) as CFDictionary, nil), errSecDuplicateItem)
        XCTAssertEqual(SecItemAdd(password("a", service: "other") as CFDictionary, nil), errSecSuccess)
    }

    func testParameterErrors() throws {
        var item = password("a")
        item[kSecClass as String] = nil
        XCTAssertEqual(SecItemAdd(item as CFDictionary, nil), errSecParam, "no class")
        XCTAssertEqual(SecItemAdd(password("a", ["no such key": true]) as CFDictionary, nil), errSecParam)
        XCTAssertEqual(SecItemAdd(password("a", [kSecValuePersistentRef as String: Data(count: 16)]) as CFDictionary, nil), errSecParam)
        XCTAssertEqual(SecItemAdd(password("a", [kSecAttrAccessible as String: "nonsense"]) as CFDictionary, nil), errSecParam)
        XCTAssertEqual(SecItemAdd(password("a", [kSecAttrAccount as String: 42]) as CFDictionary, nil), errSecParam, "a number for a string")
        XCTAssertEqual(SecItemAdd(password("a", [kSecAttrCreationDate as String: Date()]) as CFDictionary, nil), errSecParam)
        XCTAssertEqual(SecItemAdd(password("a", [kSecAttrIsInvisible as String: true]) as CFDictionary, nil), errSecParam)
        XCTAssertEqual(SecItemAdd(password("a", [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]) as CFDictionary, nil),
                       errSecParam, "kSecAttrSynchronizableAny is for queries")
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassGenericPassword] as CFDictionary, nil), errSecItemNotFound,
                       "a refused add adds nothing")
        // What Apple ignores here is ignored.
        XCTAssertEqual(SecItemAdd(password("a", [kSecUseDataProtectionKeychain as String: true]) as CFDictionary, nil), errSecSuccess)
    }

    func testAnAttributeTheClassDoesNotHaveIsNoSuchAttr() {
        XCTAssertEqual(SecItemAdd(password("a", [kSecAttrApplicationTag as String: Data("tag".utf8)]) as CFDictionary, nil), errSecNoSuchAttr)
        XCTAssertEqual(SecItemAdd(password("a", [kSecAttrServer as String: "example.com"]) as CFDictionary, nil), errSecNoSuchAttr)
        XCTAssertEqual(SecItemAdd(password("a", [kSecClass as String: "zzzz"]) as CFDictionary, nil), errSecNoSuchClass)
    }

    func testAddingWhileLockedIsInteractionNotAllowed() throws {
        try lock()
        XCTAssertEqual(SecItemAdd(password("a") as CFDictionary, nil), errSecInteractionNotAllowed)
        // After-first-unlock keys stay until lock --all.
        XCTAssertEqual(SecItemAdd(password("b", [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock]) as CFDictionary, nil),
                       errSecSuccess)
    }

    func testWhenPasscodeSetNeedsAKeychainWithAPassword() throws {
        let bare = sandbox.dataHome + "/locket/bare.keychain"
        try Keychain.create(at: bare, password: nil, kdf: .weakForTests, environment: .process)
        setenv("LOCKET_KEYCHAIN", "bare", 1)
        defer { unsetenv("LOCKET_KEYCHAIN") }
        XCTAssertEqual(SecItemAdd(password("a", [kSecAttrAccessible as String: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly]) as CFDictionary, nil),
                       errSecNotAvailable)
        XCTAssertEqual(SecItemAdd(password("a") as CFDictionary, nil), errSecSuccess, "the bare keychain, named by LOCKET_KEYCHAIN")
        unsetenv("LOCKET_KEYCHAIN")
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassGenericPassword] as CFDictionary, nil), errSecItemNotFound, "not in login")
    }

    func testNoKeychainIsNoSuchKeychain() {
        setenv("LOCKET_KEYCHAIN", "missing", 1)
        defer { unsetenv("LOCKET_KEYCHAIN") }
        XCTAssertEqual(SecItemAdd(password("a") as CFDictionary, nil), errSecNoSuchKeychain)
    }

    func testInternetPasswordAttributesRoundTrip() throws {
        let item: [String: Any] = [
            kSecClass as String: kSecClassInternetPassword,
            kSecAttrServer as String: "git.example.com",
            kSecAttrAccount as String: "alice",
            kSecAttrProtocol as String: kSecAttrProtocolHTTPS,
            kSecAttrAuthenticationType as String: kSecAttrAuthenticationTypeHTMLForm,
            kSecAttrPort as String: 8443,
            kSecAttrPath as String: "/login",
            kSecAttrCreator as String: 0x4C4B_5454 as UInt32,
            kSecValueData as String: Data("pw".utf8),
            kSecReturnAttributes as String: true,
        ]
        var result: CFTypeRef?
        XCTAssertEqual(SecItemAdd(item as CFDictionary, &result), errSecSuccess)
        let attributes = try XCTUnwrap(result as? [String: Any])
        XCTAssertEqual(attributes[kSecAttrProtocol as String] as? String, kSecAttrProtocolHTTPS as String)
        XCTAssertEqual(attributes[kSecAttrAuthenticationType as String] as? String, "form")
        XCTAssertEqual(attributes[kSecAttrPort as String] as? Int, 8443)
        XCTAssertEqual(attributes[kSecAttrPath as String] as? String, "/login")
        XCTAssertEqual((attributes[kSecAttrCreator as String] as? NSNumber)?.uint32Value, 0x4C4B_5454)
        XCTAssertEqual(attributes[kSecAttrSecurityDomain as String] as? String, "", "a primary-key string left out reads empty")
    }

    func testTheErrorMessages() {
        XCTAssertEqual(SecCopyErrorMessageString(errSecItemNotFound, nil) as String?, "the item could not be found")
        XCTAssertEqual(SecCopyErrorMessageString(errSecInteractionNotAllowed, nil) as String?,
                       "the keychain is locked for this item's protection class")
        XCTAssertEqual(SecCopyErrorMessageString(errSecDiskFull, nil) as String?, "the disk is full")
        XCTAssertNil(SecCopyErrorMessageString(-1, nil))
        XCTAssertEqual(errSecSuccess, 0)
        XCTAssertEqual(errSecMissingEntitlement, -34018)
    }
}
