import Foundation
import LocketCore
import LocketTestSupport
import Security
import XCTest

/// Issue 37: the names keychain code uses beyond SPEC §19's first list,
/// with Apple's types and values (keychain-swift's `noErr`, KeychainAccess's
/// `CFErrorCopyUserInfo` and `SecRandomCopyBytes`, SecKeyGeneratePair).
final class AppleNamesTests: SecurityTestCase {
    private func add(_ account: String) -> OSStatus {
        SecItemAdd([kSecClass: kSecClassGenericPassword, kSecAttrService: "svc", kSecAttrAccount: account,
                    kSecValueData: Data("s3cret".utf8)] as CFDictionary, nil)
    }

    private func all(_ query: [String: Any]) -> [[String: Any]] {
        var query = query
        query[kSecReturnAttributes as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitAll
        var result: CFTypeRef?
        guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess else { return [] }
        return result as? [[String: Any]] ?? []
    }

    /// noErr (MacTypes), errSecInvalidRecord, CFErrorCopyUserInfo,
    /// SecRandomCopyBytes with kSecRandomDefault, NSError(): with Apple's
    /// types, as keychain-swift, KeychainAccess and SimpleKeychain use them.
    func testTheNamesWrappersUseHaveApplesTypesAndValues() throws {
        let status: OSStatus = noErr
        XCTAssertEqual(status, 0)
        XCTAssertTrue(add("a") == noErr)
        XCTAssertEqual(errSecInvalidRecord, -67701)
        XCTAssertEqual(SecCopyErrorMessageString(errSecInvalidRecord, nil) as String?, "the record is not valid")

        var error: Unmanaged<CFError>?
        XCTAssertNil(SecKeyCreateRandomKey([kSecAttrKeyType: "no such type"] as CFDictionary, &error))
        let cfError = try XCTUnwrap(error?.takeRetainedValue())
        let userInfo = CFErrorCopyUserInfo(cfError) as! [String: Any]
        XCTAssertNotNil(userInfo[NSLocalizedDescriptionKey] as? String)
        let rebuilt = NSError(domain: CFErrorGetDomain(cfError) as String, code: CFErrorGetCode(cfError), userInfo: userInfo)
        XCTAssertEqual(rebuilt.code, Int(errSecParam))

        var bytes = [UInt8](repeating: 0, count: 32), more = [UInt8](repeating: 0, count: 32)
        XCTAssertEqual(SecRandomCopyBytes(kSecRandomDefault, bytes.count, &bytes), errSecSuccess)
        XCTAssertEqual(SecRandomCopyBytes(nil, more.count, &more), errSecSuccess)
        XCTAssertNotEqual(bytes, more)
        XCTAssertNotEqual(bytes, [UInt8](repeating: 0, count: 32))
        let data = NSMutableData(length: 16)!
        XCTAssertEqual(SecRandomCopyBytes(kSecRandomDefault, 16, data.mutableBytes), errSecSuccess)

        let placeholder = NSError()
        XCTAssertEqual(placeholder.code, 0)
        XCTAssertEqual(placeholder.domain, "")
    }

    /// SecKeyGeneratePair, Apple's older form: both keys; a top-level
    /// kSecAttrIsPermanent keeps both in the keychain.
    func testSecKeyGeneratePairGivesBothKeysAndKeepsThemWhenPermanent() throws {
        var publicKey: SecKey?, privateKey: SecKey?
        XCTAssertEqual(SecKeyGeneratePair([kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256] as CFDictionary,
                                          &publicKey, &privateKey), errSecSuccess)
        let message = Data("hello".utf8) as CFData
        var error: Unmanaged<CFError>?
        let signature = try XCTUnwrap(SecKeyCreateSignature(try XCTUnwrap(privateKey), .ecdsaSignatureMessageX962SHA256, message, &error))
        XCTAssertTrue(SecKeyVerifySignature(try XCTUnwrap(publicKey), .ecdsaSignatureMessageX962SHA256, message, signature, &error))
        XCTAssertEqual(all([kSecClass as String: kSecClassKey]).count, 0, "not permanent: nothing kept")

        let tag = Data("com.example.pair".utf8)
        XCTAssertEqual(SecKeyGeneratePair([kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits: 1024, kSecAttrIsPermanent: true,
                                           kSecAttrApplicationTag: tag] as CFDictionary, &publicKey, &privateKey), errSecSuccess)
        let kept = all([kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag])
        XCTAssertEqual(Set(kept.compactMap { $0[kSecAttrKeyClass as String] as? String }),
                       [kSecAttrKeyClassPrivate as String, kSecAttrKeyClassPublic as String])
        XCTAssertEqual(kept.first?[kSecAttrKeySizeInBits as String] as? Int, 1024)
        XCTAssertEqual(SecKeyGeneratePair([kSecAttrKeyType: "nonsense"] as CFDictionary, &publicKey, &privateKey), errSecParam)
    }
}
