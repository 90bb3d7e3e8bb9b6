import Foundation
@testable import LocketCore
import XCTest

/// The direct reading of Ed25519/X25519 PKCS#8 (no libcrypto decoder, issue
/// 14's agent speed-up) gives what openssl gives for the same bytes, signs
/// as the generic path does, and leaves every other shape to the generic path.
final class Curve25519PKCS8Tests: XCTestCase {
    func testOpenSSLsKeysReadDirectlyMatchOpenSSL() throws {
        let fixture = try KeysFixture()
        for (kind, type) in [("ed25519", KeyType.ed25519), ("x25519", .x25519)] {
            _ = try Tools.must("openssl", ["genpkey", "-algorithm", kind, "-outform", "DER", "-out", fixture.path("\(kind).der")])
            let der = try fixture.read("\(kind).der")
            XCTAssertNotNil(der.withUnsafeBytes { Curve25519PKCS8.split($0) }, "openssl's \(kind) PKCS#8 is the one-version shape")
            let key = try AsymmetricKey(pkcs8: SecureBytes(copying: der))
            XCTAssertEqual(key.keyType, type)
            XCTAssertEqual(key.sizeInBits, 256)
            XCTAssertEqual(key.pkcs8?.bytes, der)
            let spki = try Tools.must("openssl", ["pkey", "-inform", "DER", "-in", fixture.path("\(kind).der"), "-pubout", "-outform", "DER"]).stdout
            XCTAssertEqual(key.subjectPublicKeyInfo, spki, kind)
            XCTAssertEqual(key.publicKeyExternalRepresentation, Array(spki.suffix(32)), kind)
        }
    }

    func testTheDirectPathAgreesWithTheGenericOne() throws {
        for type in [KeyGenerationType.ed25519, .x25519] {
            let generated = try AsymmetricKey.generate(type)  // made and encoded through libcrypto's encoders
            let read = try AsymmetricKey(pkcs8: generated.pkcs8!)
            XCTAssertEqual(read.subjectPublicKeyInfo, generated.subjectPublicKeyInfo)
            XCTAssertEqual(read.publicKeyExternalRepresentation, generated.publicKeyExternalRepresentation)
            XCTAssertEqual(read.applicationLabel, generated.applicationLabel)
            if type == .ed25519 {
                let signature = try read.sign(Array("m".utf8), algorithm: .ed25519)
                XCTAssertTrue(try generated.verify(signature: signature, for: Array("m".utf8), algorithm: .ed25519))
                XCTAssertTrue(try generated.publicKey.verifySSHSignature(try read.sshSignature(for: [1, 2, 3]), for: [1, 2, 3]))
            } else {
                let box = try generated.encrypt(Array("sealed".utf8), algorithm: .x25519SealedBox)
                XCTAssertEqual(try read.decrypt(box, algorithm: .x25519SealedBox).bytes, Array("sealed".utf8))
            }
        }
    }

    func testOtherShapesTakeTheGenericPath() throws {
        let der = try AsymmetricKey.generate(.ed25519).pkcs8!.bytes
        for i in [0, 1, 4, 9, 11, 12, 15] {
            var changed = der
            changed[i] ^= 0x01
            XCTAssertNil(changed.withUnsafeBytes { Curve25519PKCS8.split($0) }, "byte \(i)")
        }
        XCTAssertNil((der + [0]).withUnsafeBytes { Curve25519PKCS8.split($0) })
        // The OID of Ed448 in the same shape: the generic path, which refuses it (an Ed448 key is 57 bytes).
        var ed448 = der
        ed448[11] = 0x71
        assertKeychainError(.decode) { try AsymmetricKey(pkcs8: SecureBytes(copying: ed448)) }
        XCTAssertNil(try AsymmetricKey.generate(.p256).pkcs8!.bytes.withUnsafeBytes { Curve25519PKCS8.split($0) })
    }
}
