import Foundation
import LocalAuthentication
import Security
import XCTest

/// The seeds' snippets about access control, keys and certificates
/// (the tutorial's application password and user presence, keys found by
/// application tag, the guide's Secure Enclave key, "import, then add"),
/// written as those snippets write them.
final class SeedKeyIdiomTests: SecurityTestCase {
    // MARK: - Access control

    func testAccessibleAndAccessControlTogetherAreAParameterError() throws {
        let access = try XCTUnwrap(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, .userPresence, nil))
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: "bank",
            kSecAttrAccount as String: "me",
            kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked,
            kSecAttrAccessControl as String: access,
            kSecValueData as String: Data("pin".utf8),
        ]
        XCTAssertEqual(SecItemAdd(query as CFDictionary, nil), -50)
    }

    func testAnApplicationPasswordGivenThroughAnLAContext() throws {
        var error: Unmanaged<CFError>?
        guard let access = SecAccessControlCreateWithFlags(kCFAllocatorDefault, kSecAttrAccessibleWhenUnlocked, .applicationPassword, &error) else {
            throw error!.takeRetainedValue() as Error
        }
        // A password the app's server returned: never asked at a terminal.
        let context = LAContext()
        context.setCredential(Data("from the server".utf8), type: .applicationPassword)
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: "vault",
            kSecAttrAccount as String: "key",
            kSecAttrAccessControl as String: access,
            kSecUseAuthenticationContext as String: context,
            kSecValueData as String: Data("wrapped key".utf8),
        ]
        XCTAssertEqual(SecItemAdd(query as CFDictionary, nil), errSecSuccess)

        query[kSecValueData as String] = nil
        query[kSecAttrAccessControl as String] = nil
        query[kSecReturnData as String] = kCFBooleanTrue
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual(result as? Data, Data("wrapped key".utf8))

        let wrong = LAContext()
        wrong.setCredential(Data("guess".utf8), type: .applicationPassword)
        query[kSecUseAuthenticationContext as String] = wrong
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecAuthFailed)

        // No credential, and no interaction allowed: the proof is missing, not the item.
        let silent = LAContext()
        silent.interactionNotAllowed = true
        query[kSecUseAuthenticationContext as String] = silent
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecInteractionNotAllowed)
        // Its attributes need no proof.
        query[kSecReturnData as String] = nil
        query[kSecReturnAttributes as String] = true
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        XCTAssertNotNil((result as? [String: Any])?[kSecAttrAccessControl as String] as? SecAccessControl)
    }

    func testUserPresenceWithoutAnyWayToAskIsInteractionNotAllowed() throws {
        let access = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, [.biometryAny, .or, .devicePasscode], nil)!
        let add: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: "banking",
            kSecAttrAccount as String: "login",
            kSecAttrAccessControl as String: access,
            kSecValueData as String: Data("refresh token".utf8),
        ]
        XCTAssertEqual(SecItemAdd(add as CFDictionary, nil), errSecSuccess)
        let load: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: "banking",
            kSecAttrAccount as String: "login",
            kSecReturnData as String: true,
            kSecUseOperationPrompt as String: "Authenticate to log in",
            kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail,
        ]
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(load as CFDictionary, &result), errSecInteractionNotAllowed)
        XCTAssertNil(result)
    }

    // MARK: - Keys by application tag

    func testAPrivateKeyFoundByItsApplicationTag() throws {
        let tag = "com.mydomain.mykey".data(using: .utf8)!
        let attributes: [String: Any] = [
            kSecAttrKeyType as String: kSecAttrKeyTypeRSA,
            kSecAttrKeySizeInBits as String: 2048,
            kSecPrivateKeyAttrs as String: [
                kSecAttrIsPermanent as String: true,
                kSecAttrApplicationTag as String: tag,
            ],
        ]
        var error: Unmanaged<CFError>?
        guard let privateKey = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else {
            throw error!.takeRetainedValue() as Error
        }
        let getquery: [String: Any] = [
            kSecClass as String: kSecClassKey,
            kSecAttrApplicationTag as String: tag,
            kSecAttrKeyType as String: kSecAttrKeyTypeRSA,
            kSecReturnRef as String: true,
        ]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(getquery as CFDictionary, &item)
        guard status == errSecSuccess else { return XCTFail("SecItemCopyMatching: \(status)") }
        let key = item as! SecKey
        XCTAssertEqual(key, privateKey)
        let message = Data("signed by tag".utf8)
        let signature = try XCTUnwrap(SecKeyCreateSignature(key, .rsaSignatureMessagePSSSHA256, message as CFData, &error) as Data?)
        let publicKey = try XCTUnwrap(SecKeyCopyPublicKey(key))
        XCTAssertTrue(SecKeyVerifySignature(publicKey, .rsaSignatureMessagePSSSHA256, message as CFData, signature as CFData, &error))
    }

    // MARK: - A Secure Enclave key

    func testASecureEnclaveKeySignsAndNeverLeaves() throws {
        // Secure Enclave keys live in a TPM (SPEC §21): a swtpm of the test's own.
        try useSoftwareTPM()
        var error: Unmanaged<CFError>?
        let access = SecAccessControlCreateWithFlags(kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .privateKeyUsage, &error)!
        let attributes: NSDictionary = [
            kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom,
            kSecAttrKeySizeInBits: 256,
            kSecAttrTokenID: kSecAttrTokenIDSecureEnclave,
            kSecPrivateKeyAttrs: [
                kSecAttrIsPermanent: true,
                kSecAttrApplicationTag: Data("com.example.se".utf8),
                kSecAttrAccessControl: access,
            ] as NSDictionary,
        ]
        guard let privateKey = SecKeyCreateRandomKey(attributes, &error) else { throw error!.takeRetainedValue() as Error }
        let data = Data("attest".utf8)
        let signature = SecKeyCreateSignature(privateKey, SecKeyAlgorithm.ecdsaSignatureMessageX962SHA256, data as CFData, &error)! as Data
        let publicKey = SecKeyCopyPublicKey(privateKey)!
        XCTAssertTrue(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, data as CFData, signature as CFData, &error))
        XCTAssertNotNil(SecKeyCopyExternalRepresentation(publicKey, &error))
        XCTAssertNil(SecKeyCopyExternalRepresentation(privateKey, &error))
        XCTAssertEqual(CFErrorGetCode(error!.takeRetainedValue()), Int(errSecDataNotAvailable))
        let attributesOut = SecKeyCopyAttributes(privateKey) as! [String: Any]
        XCTAssertEqual(attributesOut[kSecAttrTokenID as String] as? String, kSecAttrTokenIDSecureEnclave as String)
    }

    // MARK: - Import, then add

    func testImportACertificateThenAddItAndReadItsIssuer() throws {
        let fixtures = try CertificateFixtures(in: sandbox.root)
        let certData = try fixtures.leafDER()
        let cert = try XCTUnwrap(SecCertificateCreateWithData(nil, certData as NSData))
        let attrs = try secCall {
            SecItemAdd([
                kSecValueRef: cert,
                kSecReturnAttributes: true,
            ] as NSDictionary, $0)
        } as [String: Any]
        let issuer = attrs[kSecAttrIssuer as String] as! NSData
        XCTAssertGreaterThan(issuer.length, 0)
        XCTAssertEqual(attrs[kSecAttrLabel as String] as? String, "leaf.example.com")
        XCTAssertEqual(SecCertificateCopySubjectSummary(cert) as String?, "leaf.example.com")
        XCTAssertEqual(SecCertificateCopyData(cert) as Data, certData)
    }

    func secCall<Result>(_ body: (_ resultPtr: UnsafeMutablePointer<CFTypeRef?>) -> OSStatus) throws -> Result {
        var result: CFTypeRef? = nil
        let err = body(&result)
        guard err == errSecSuccess else { throw NSError(domain: NSOSStatusErrorDomain, code: Int(err), userInfo: nil) }
        return result as! Result
    }
}
