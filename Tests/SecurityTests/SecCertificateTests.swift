import Foundation
import Security
import XCTest

/// Certificates, identities and PKCS#12 as Apple documents them (SPEC §12):
/// an identity is a certificate and the private key whose application label
/// is its public key hash, never stored as such.
final class SecCertificateTests: SecurityTestCase {
    private var fixtures: CertificateFixtures!

    override func setUpWithError() throws {
        try super.setUpWithError()
        fixtures = try CertificateFixtures(in: sandbox.root)
    }

    private func importIdentity(password: String = CertificateFixtures.p12Password) throws -> (OSStatus, [[String: Any]]) {
        var items: CFArray?
        let status = SecPKCS12Import(try fixtures.pkcs12() as CFData, [kSecImportExportPassphrase as String: password] as CFDictionary, &items)
        return (status, (items as? [[String: Any]]) ?? [])
    }

    func testACertificateFromItsData() throws {
        let der = try fixtures.leafDER()
        let certificate = try XCTUnwrap(SecCertificateCreateWithData(kCFAllocatorDefault, der as CFData))
        XCTAssertEqual(SecCertificateCopyData(certificate) as Data, der)
        XCTAssertEqual(SecCertificateCopySubjectSummary(certificate) as String?, "leaf.example.com")
        var commonName: CFString?
        XCTAssertEqual(SecCertificateCopyCommonName(certificate, &commonName), errSecSuccess)
        XCTAssertEqual(commonName as String?, "leaf.example.com")
        let key = try XCTUnwrap(SecCertificateCopyKey(certificate))
        XCTAssertEqual((SecKeyCopyAttributes(key) as? [String: Any])?[kSecAttrKeyClass as String] as? String, kSecAttrKeyClassPublic as String)
        XCTAssertNil(SecCertificateCreateWithData(nil, Data("not a certificate".utf8) as CFData))
        XCTAssertEqual(CFGetTypeID(certificate), SecCertificateGetTypeID())
    }

    func testPKCS12ImportGivesTheIdentityAndItsChain() throws {
        let (status, items) = try importIdentity()
        XCTAssertEqual(status, errSecSuccess)
        XCTAssertEqual(items.count, 1)
        let identity = items[0][kSecImportItemIdentity as String] as! SecIdentity
        XCTAssertEqual(items[0][kSecImportItemLabel as String] as? String, "Leaf Identity")
        XCTAssertEqual((items[0][kSecImportItemCertChain as String] as? [SecCertificate])?.count, 2)
        var certificate: SecCertificate?
        var privateKey: SecKey?
        XCTAssertEqual(SecIdentityCopyCertificate(identity, &certificate), errSecSuccess)
        XCTAssertEqual(SecIdentityCopyPrivateKey(identity, &privateKey), errSecSuccess)
        let keyID = items[0][kSecImportItemKeyID as String] as? Data
        XCTAssertEqual(keyID, (SecKeyCopyAttributes(privateKey!) as? [String: Any])?[kSecAttrApplicationLabel as String] as? Data)
        // The identity's key signs what its certificate's key verifies.
        var error: Unmanaged<CFError>?
        let message = Data("client hello".utf8) as CFData
        let signature = try XCTUnwrap(SecKeyCreateSignature(privateKey!, .ecdsaSignatureMessageX962SHA256, message, &error))
        XCTAssertTrue(SecKeyVerifySignature(SecCertificateCopyKey(certificate!)!, .ecdsaSignatureMessageX962SHA256, message, signature, &error))

        XCTAssertEqual(try importIdentity(password: "wrong").0, errSecAuthFailed)
        var nothing: CFArray?
        XCTAssertEqual(SecPKCS12Import(Data("junk".utf8) as CFData, [kSecImportExportPassphrase: "x"] as CFDictionary, &nothing), errSecDecode)
    }

    /// Adding an identity adds its key and certificate; the keychain pairs
    /// them again; deleting the identity deletes both.
    func testAnIdentityAddedFoundAndDeleted() throws {
        let identity = try importIdentity().1[0][kSecImportItemIdentity as String] as! SecIdentity
        XCTAssertEqual(SecItemAdd([kSecValueRef: identity, kSecAttrLabel: "client", kSecAttrIsExtractable: false] as CFDictionary, nil), errSecSuccess)
        XCTAssertEqual(SecItemAdd([kSecValueRef: identity] as CFDictionary, nil), errSecDuplicateItem)
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassIdentity, kSecAttrLabel: "client", kSecReturnRef: true] as CFDictionary, &result),
                       errSecSuccess)
        let found = try XCTUnwrap(result as? SecIdentity)
        var key: SecKey?
        XCTAssertEqual(SecIdentityCopyPrivateKey(found, &key), errSecSuccess)
        var error: Unmanaged<CFError>?
        XCTAssertNotNil(SecKeyCreateSignature(key!, .ecdsaSignatureMessageX962SHA256, Data("m".utf8) as CFData, &error))
        XCTAssertNil(SecKeyCopyExternalRepresentation(key!, &error), "added non-extractable")
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassCertificate, kSecReturnRef: true, kSecMatchLimit: kSecMatchLimitAll] as CFDictionary,
                                           &result), errSecSuccess)
        XCTAssertEqual((result as? [SecCertificate])?.count, 1)
        XCTAssertEqual(SecItemDelete([kSecClass: kSecClassIdentity, kSecAttrLabel: "client"] as CFDictionary), errSecSuccess)
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassKey] as CFDictionary, nil), errSecItemNotFound)
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassCertificate] as CFDictionary, nil), errSecItemNotFound)
    }

    func testACertificateAddedFromItsDataIsFoundByItsValue() throws {
        let der = try fixtures.leafDER()
        var result: CFTypeRef?
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassCertificate, kSecValueData: der, kSecReturnPersistentRef: true] as CFDictionary, &result),
                       errSecSuccess)
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassCertificate, kSecValueData: der] as CFDictionary, nil), errSecDuplicateItem)
        let certificate = SecCertificateCreateWithData(nil, der as CFData)!
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassCertificate, kSecValueRef: certificate, kSecReturnData: true] as CFDictionary,
                                           &result), errSecSuccess)
        XCTAssertEqual(result as? Data, der)
        XCTAssertEqual(SecItemDelete([kSecClass: kSecClassCertificate, kSecValueRef: certificate] as CFDictionary), errSecSuccess)
    }
}
