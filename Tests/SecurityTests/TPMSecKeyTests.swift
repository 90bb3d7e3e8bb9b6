import Foundation
import LocketCore
import LocketTestSupport
import Security
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Apple's Secure Enclave calls on a TPM (SPEC §21, issue 39): a key made
/// with kSecAttrTokenIDSecureEnclave, kept or not, signs (checked against
/// its public key), agrees (SecKeyCopyKeyExchangeResult, equal to the
/// software side's) and decrypts Apple's ECIES through swtpm; it never
/// leaves; without a TPM the token is errSecNotAvailable.
final class TPMSecKeyTests: SecurityTestCase {
    private let message = Data("signed in the TPM".utf8) as CFData

    private func randomKey(_ parameters: [String: Any]) throws -> SecKey {
        var error: Unmanaged<CFError>?
        guard let key = SecKeyCreateRandomKey(parameters as CFDictionary, &error) else { throw error!.takeRetainedValue() as Error }
        return key
    }

    private func code(_ body: (UnsafeMutablePointer<Unmanaged<CFError>?>) -> Any?) -> Int? {
        var error: Unmanaged<CFError>?
        let value = body(&error)
        XCTAssertNil(value)
        return error.map { CFErrorGetCode($0.takeRetainedValue()) }
    }

    /// Sign, verify, ECDH with a software peer, ECIES both ways, and the attributes Apple gives.
    private func exercise(_ key: SecKey, file: StaticString = #filePath, line: UInt = #line) throws {
        var error: Unmanaged<CFError>?
        let publicKey = try XCTUnwrap(SecKeyCopyPublicKey(key), file: file, line: line)
        let signature = try XCTUnwrap(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message, &error), "\(String(describing: error))",
                                      file: file, line: line)
        XCTAssertTrue(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message, signature, &error), file: file, line: line)
        XCTAssertFalse(SecKeyIsAlgorithmSupported(key, .sign, .ecdsaSignatureMessageX962SHA384), "SHA-256 only, as Apple's", file: file, line: line)
        XCTAssertEqual(code { SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA384, message, $0) }, Int(errSecParam), file: file, line: line)
        // ECDH: the TPM's secret is the software peer's.
        let peer = try randomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256])
        let peerPublic = try XCTUnwrap(SecKeyCopyPublicKey(peer))
        XCTAssertTrue(SecKeyIsAlgorithmSupported(key, .keyExchange, .ecdhKeyExchangeStandard), file: file, line: line)
        let ours = try XCTUnwrap(SecKeyCopyKeyExchangeResult(key, .ecdhKeyExchangeStandard, peerPublic, [:] as CFDictionary, &error) as Data?,
                                 "\(String(describing: error))", file: file, line: line)
        let theirs = try XCTUnwrap(SecKeyCopyKeyExchangeResult(peer, .ecdhKeyExchangeStandard, publicKey, [:] as CFDictionary, &error) as Data?)
        XCTAssertEqual(ours.count, 32, file: file, line: line)
        XCTAssertEqual(ours, theirs, file: file, line: line)
        let parameters = [kSecKeyKeyExchangeParameterRequestedSize: 48, kSecKeyKeyExchangeParameterSharedInfo: Data("info".utf8)] as CFDictionary
        let derived = SecKeyCopyKeyExchangeResult(key, .ecdhKeyExchangeCofactorX963SHA256, peerPublic, parameters, &error) as Data?
        XCTAssertEqual(derived?.count, 48, file: file, line: line)
        XCTAssertEqual(derived, SecKeyCopyKeyExchangeResult(peer, .ecdhKeyExchangeCofactorX963SHA256, publicKey, parameters, &error) as Data?,
                       file: file, line: line)
        // Apple's ECIES: encrypted to the public key, decrypted in the TPM.
        let plaintext = Data("the plaintext".utf8)
        let ciphertext = try XCTUnwrap(SecKeyCreateEncryptedData(publicKey, .eciesEncryptionCofactorVariableIVX963SHA256AESGCM, plaintext as CFData, &error))
        XCTAssertEqual(SecKeyCreateDecryptedData(key, .eciesEncryptionCofactorVariableIVX963SHA256AESGCM, ciphertext, &error) as Data?, plaintext,
                       "\(String(describing: error))", file: file, line: line)
        // It never leaves; its attributes say where it lives.
        XCTAssertEqual(code { SecKeyCopyExternalRepresentation(key, $0) }, Int(errSecDataNotAvailable), file: file, line: line)
        let attributes = try XCTUnwrap(SecKeyCopyAttributes(key) as? [String: Any], file: file, line: line)
        XCTAssertEqual(attributes[kSecAttrTokenID as String] as? String, kSecAttrTokenIDSecureEnclave as String, file: file, line: line)
        XCTAssertEqual(attributes[kSecAttrIsExtractable as String] as? Bool, false, file: file, line: line)
        XCTAssertEqual(attributes[kSecAttrKeySizeInBits as String] as? Int, 256, file: file, line: line)
    }

    func testAKeptSecureEnclaveKeyIsMadeAndUsedInTheTPM() throws {
        try useSoftwareTPM()
        let tag = Data("com.example.tpm".utf8)
        let key = try randomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256,
                                 kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
                                 kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: tag]])
        try exercise(key)
        // Found by its token, as a reference that signs in the TPM.
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassKey, kSecAttrTokenID: kSecAttrTokenIDSecureEnclave, kSecReturnRef: true] as CFDictionary,
                                           &result), errSecSuccess)
        try exercise(try XCTUnwrap(result as! SecKey?))
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassKey, kSecAttrApplicationTag: tag, kSecReturnData: true] as CFDictionary, nil),
                       errSecDataNotAvailable)
    }

    func testASecureEnclaveKeyNotKeptLivesInTheTPMAlone() throws {
        try useSoftwareTPM()
        let key = try randomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256,
                                 kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave])
        try exercise(key)
        XCTAssertEqual((SecKeyCopyAttributes(key) as? [String: Any])?[kSecAttrIsPermanent as String] as? Bool, false)
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassKey] as CFDictionary, nil), errSecItemNotFound, "nothing stored")
    }

    /// No TPM: errSecNotAvailable, never a software key in its place; the software form only by name.
    func testWithoutATPMTheTokenIsNotAvailable() throws {
        guard access("/dev/tpmrm0", F_OK) != 0 else { throw XCTSkip("this machine has /dev/tpmrm0") }
        for permanent in [false, true] {
            var error: Unmanaged<CFError>?
            let key = SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrTokenID: kSecAttrTokenIDSecureEnclave,
                                             kSecAttrIsPermanent: permanent] as CFDictionary, &error)
            XCTAssertNil(key)
            let failure = try XCTUnwrap(error?.takeRetainedValue())
            XCTAssertEqual(CFErrorGetCode(failure), Int(errSecNotAvailable))
            XCTAssertTrue("\(failure)".contains("no TPM was found"), "\(failure)")
        }
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassKey] as CFDictionary, nil), errSecItemNotFound, "nothing stored")
        let soft = try randomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrTokenID as String: kSecAttrTokenIDSoftwareEnclave,
                                  kSecAttrIsPermanent as String: true])
        var error: Unmanaged<CFError>?
        XCTAssertNotNil(SecKeyCreateSignature(soft, .ecdsaSignatureMessageX962SHA256, message, &error))
        XCTAssertNil(SecKeyCopyExternalRepresentation(soft, &error))
        XCTAssertNil((SecKeyCopyAttributes(soft) as? [String: Any])?[kSecAttrTokenID as String])
    }
}
