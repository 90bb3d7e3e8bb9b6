import Foundation
import LocalAuthentication
import Security
import XCTest

/// The SecKey functions as Apple documents them (SPEC §12-13): making keys
/// in memory and in the keychain, their external representations, the
/// algorithms, and each error.
final class SecKeyTests: SecurityTestCase {
    private func randomKey(_ parameters: [String: Any]) throws -> SecKey {
        var error: Unmanaged<CFError>?
        guard let key = SecKeyCreateRandomKey(parameters as CFDictionary, &error) else { throw error!.takeRetainedValue() as Error }
        return key
    }

    private func failure(_ body: (UnsafeMutablePointer<Unmanaged<CFError>?>) -> Any?) -> Int? {
        var error: Unmanaged<CFError>?
        let value = body(&error)
        XCTAssertTrue(value == nil || (value as? Bool) == false, "expected a failure, got \(String(describing: value))")
        return error.map { CFErrorGetCode($0.takeRetainedValue()) }
    }

    func testExternalRepresentationsRoundTrip() throws {
        for (type, bits, publicLength) in [(kSecAttrKeyTypeECSECPrimeRandom, 256, 65), (kSecAttrKeyTypeEC, 384, 97), (kSecAttrKeyTypeRSA, 2048, 270)] {
            let privateKey = try randomKey([kSecAttrKeyType as String: type, kSecAttrKeySizeInBits as String: bits])
            let publicKey = try XCTUnwrap(SecKeyCopyPublicKey(privateKey))
            var error: Unmanaged<CFError>?
            let publicData = try XCTUnwrap(SecKeyCopyExternalRepresentation(publicKey, &error) as Data?)
            XCTAssertEqual(publicData.count, publicLength, "\(type) \(bits)")
            let privateData = try XCTUnwrap(SecKeyCopyExternalRepresentation(privateKey, &error) as Data?)
            let options: [String: Any] = [kSecAttrKeyType as String: type, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                                          kSecAttrKeySizeInBits as String: bits]
            let restored = try XCTUnwrap(SecKeyCreateWithData(privateData as CFData, options as CFDictionary, &error))
            XCTAssertEqual(restored, privateKey)
            let publicOptions: [String: Any] = [kSecAttrKeyType as String: type, kSecAttrKeyClass as String: kSecAttrKeyClassPublic]
            XCTAssertEqual(SecKeyCreateWithData(publicData as CFData, publicOptions as CFDictionary, &error), publicKey)
            let attributes = SecKeyCopyAttributes(privateKey) as! [String: Any]
            XCTAssertEqual(attributes[kSecAttrKeyClass as String] as? String, kSecAttrKeyClassPrivate as String)
            XCTAssertEqual(attributes[kSecAttrKeyType as String] as? String, type as String)
            XCTAssertEqual(attributes[kSecAttrKeySizeInBits as String] as? Int, bits)
            XCTAssertEqual((attributes[kSecAttrApplicationLabel as String] as? Data)?.count, 20)
            XCTAssertEqual(attributes[kSecAttrCanSign as String] as? Bool, true)
            XCTAssertEqual(attributes[kSecAttrIsPermanent as String] as? Bool, false)
        }
    }

    /// The RSA key in memory from data (the run's: its prime search is
    /// testExternalRepresentationsRoundTrip's to pay; issue 38).
    private func runRSAKey() throws -> SecKey {
        var error: Unmanaged<CFError>?
        let options = [kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeyClass: kSecAttrKeyClassPrivate] as CFDictionary
        guard let key = SecKeyCreateWithData(try runRSAKeyData() as CFData, options, &error) else { throw error!.takeRetainedValue() as Error }
        return key
    }

    func testSignaturesAndEncryption() throws {
        let ec = try randomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256])
        let rsa = try runRSAKey()
        let message = Data("the message".utf8) as CFData
        var error: Unmanaged<CFError>?
        for (key, algorithm) in [(ec, SecKeyAlgorithm.ecdsaSignatureMessageX962SHA256), (rsa, .rsaSignatureMessagePSSSHA256),
                                 (rsa, .rsaSignatureMessagePKCS1v15SHA512)] {
            let signature = try XCTUnwrap(SecKeyCreateSignature(key, algorithm, message, &error))
            let publicKey = SecKeyCopyPublicKey(key)!
            XCTAssertTrue(SecKeyIsAlgorithmSupported(publicKey, .verify, algorithm))
            XCTAssertTrue(SecKeyVerifySignature(publicKey, algorithm, message, signature, &error))
            XCTAssertEqual(failure { SecKeyVerifySignature(publicKey, algorithm, Data("another".utf8) as CFData, signature, $0) },
                           Int(errSecVerifyFailed))
        }
        for (key, algorithm) in [(ec, SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM), (rsa, .rsaEncryptionOAEPSHA256)] {
            let publicKey = SecKeyCopyPublicKey(key)!
            let sealed = try XCTUnwrap(SecKeyCreateEncryptedData(publicKey, algorithm, message, &error))
            XCTAssertEqual(SecKeyCreateDecryptedData(key, algorithm, sealed, &error) as Data?, message as Data)
            var tampered = sealed as Data
            tampered[tampered.count - 1] ^= 1
            XCTAssertEqual(failure { SecKeyCreateDecryptedData(key, algorithm, tampered as CFData, $0) }, Int(errSecDecode))
        }
        XCTAssertEqual(SecKeyGetBlockSize(rsa), 256)
    }

    func testWhatIsNotSupportedSaysSo() throws {
        let ec = try randomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom])
        let message = Data("m".utf8) as CFData
        XCTAssertFalse(SecKeyIsAlgorithmSupported(ec, .sign, .rsaSignatureMessagePSSSHA256))
        XCTAssertFalse(SecKeyIsAlgorithmSupported(ec, .sign, .ecdsaSignatureRFC4754))
        XCTAssertEqual(failure { SecKeyCreateSignature(ec, .rsaSignatureMessagePSSSHA256, message, $0) }, Int(errSecParam))
        XCTAssertEqual(failure { SecKeyCreateSignature(SecKeyCopyPublicKey(ec)!, .ecdsaSignatureMessageX962SHA256, message, $0) }, Int(errSecParam))
        XCTAssertEqual(failure { SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits: 1000] as CFDictionary, $0) },
                       Int(errSecParam))
        XCTAssertEqual(failure { SecKeyCreateRandomKey([kSecAttrKeySizeInBits: 256] as CFDictionary, $0) }, Int(errSecParam))
        XCTAssertEqual(failure { SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrTokenID: kSecAttrTokenIDSecureEnclave] as CFDictionary, $0) },
                       Int(errSecParam), "the Secure Enclave makes P-256 keys")
        XCTAssertEqual(failure { SecKeyCreateWithData(Data([4, 1, 2]) as CFData, [kSecAttrKeyType: kSecAttrKeyTypeEC,
                                                                                  kSecAttrKeyClass: kSecAttrKeyClassPublic] as CFDictionary, $0) },
                       Int(errSecDecode))
        XCTAssertEqual(failure { SecKeyCreateWithData(Data() as CFData, [kSecAttrKeyType: kSecAttrKeyTypeEC] as CFDictionary, $0) }, Int(errSecParam))
    }

    /// A key made in the keychain is a key item (`locket key generate`'s),
    /// found again by tag; a Secure Enclave one is never extractable.
    func testPermanentKeysAreItems() throws {
        // Secure Enclave keys live in a TPM (SPEC §21): a swtpm of the test's own.
        try useSoftwareTPM()
        let tag = Data("com.example.keys.signing".utf8)
        let made = try randomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrIsPermanent as String: true,
                                  kSecAttrApplicationTag as String: tag, kSecAttrLabel as String: "Signing key",
                                  kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave])
        var result: CFTypeRef?
        let query: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag,
                                    kSecAttrKeyClass as String: kSecAttrKeyClassPrivate, kSecReturnAttributes as String: true,
                                    kSecReturnRef as String: true]
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        let found = try XCTUnwrap(result as? [String: Any])
        XCTAssertEqual(found[kSecAttrLabel as String] as? String, "Signing key")
        XCTAssertEqual(found[kSecAttrIsExtractable as String] as? Bool, false)
        XCTAssertEqual(found[kSecAttrTokenID as String] as? String, kSecAttrTokenIDSecureEnclave as String)
        XCTAssertEqual(found[kSecAttrKeyType as String] as? String, kSecAttrKeyTypeECSECPrimeRandom as String)
        XCTAssertEqual(found[kSecValueRef as String] as? SecKey, made)
        var data = query
        data[kSecReturnData as String] = true
        XCTAssertEqual(SecItemCopyMatching(data as CFDictionary, &result), errSecDataNotAvailable)
        // kSecAttrTokenID finds the keys that never leave.
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassKey, kSecAttrTokenID: kSecAttrTokenIDSecureEnclave] as CFDictionary, nil), errSecSuccess)
        XCTAssertEqual(SecItemDelete([kSecClass: kSecClassKey, kSecAttrApplicationTag: tag] as CFDictionary), errSecSuccess)
        var error: Unmanaged<CFError>?
        XCTAssertNil(SecKeyCreateSignature(made, .ecdsaSignatureMessageX962SHA256, Data("m".utf8) as CFData, &error))
        XCTAssertEqual(CFErrorGetCode(error!.takeRetainedValue()), Int(errSecItemNotFound), "deleted keys sign nothing")
    }

    /// A key in memory added with SecItemAdd, non-extractable: used, never exported.
    func testAddingAKeyMadeInMemory() throws {
        let key = try runRSAKey()
        var result: CFTypeRef?
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassKey, kSecValueRef: key, kSecAttrApplicationTag: Data("imported".utf8),
                                   kSecAttrIsExtractable: false, kSecReturnRef: true] as CFDictionary, &result), errSecSuccess)
        let stored = try XCTUnwrap(result as? SecKey)
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassKey, kSecValueRef: key, kSecAttrApplicationTag: Data("imported".utf8)] as CFDictionary, nil),
                       errSecDuplicateItem, "the application tag is part of a key's primary key")
        var error: Unmanaged<CFError>?
        let message = Data("m".utf8) as CFData
        let signature = try XCTUnwrap(SecKeyCreateSignature(stored, .rsaSignatureMessagePKCS1v15SHA256, message, &error))
        XCTAssertTrue(SecKeyVerifySignature(SecKeyCopyPublicKey(key)!, .rsaSignatureMessagePKCS1v15SHA256, message, signature, &error))
        XCTAssertNil(SecKeyCopyExternalRepresentation(stored, &error))
        // A public key's data, in Apple's representation, from its item.
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassKey, kSecValueData: SecKeyCopyExternalRepresentation(SecKeyCopyPublicKey(key)!, nil)!,
                                   kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeyClass: kSecAttrKeyClassPublic,
                                   kSecAttrApplicationTag: Data("imported".utf8)] as CFDictionary, nil), errSecSuccess)
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassKey, kSecAttrKeyClass: kSecAttrKeyClassPublic, kSecReturnData: true] as CFDictionary,
                                           &result), errSecSuccess)
        XCTAssertEqual(result as? Data, SecKeyCopyExternalRepresentation(SecKeyCopyPublicKey(key)!, nil) as Data?)
    }

    /// A key whose access control needs a proof: used with it, refused without.
    func testAKeyWithAnApplicationPassword() throws {
        let access = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, [.privateKeyUsage, .applicationPassword], nil)!
        let context = LAContext()
        context.setCredential(Data("key password".utf8), type: .applicationPassword)
        let key = try randomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecUseAuthenticationContext as String: context,
                                 kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: true, kSecAttrAccessControl as String: access,
                                                                 kSecAttrApplicationTag as String: Data("guarded".utf8)]])
        var error: Unmanaged<CFError>?
        XCTAssertNotNil(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, Data("m".utf8) as CFData, &error))
        let silent = LAContext()
        silent.interactionNotAllowed = true
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassKey, kSecAttrApplicationTag: Data("guarded".utf8), kSecReturnRef: true,
                                            kSecUseAuthenticationContext: silent] as CFDictionary, &result), errSecSuccess)
        let found = try XCTUnwrap(result as? SecKey)
        XCTAssertNil(SecKeyCreateSignature(found, .ecdsaSignatureMessageX962SHA256, Data("m".utf8) as CFData, &error))
        XCTAssertEqual(CFErrorGetCode(error!.takeRetainedValue()), Int(errSecInteractionNotAllowed))
    }
}
