import Foundation
@testable import LocketCore
import XCTest

/// Secure Enclave keys in a TPM (SPEC §21), proven against a real TPM 2.0
/// (swtpm) and real clients: openssl verifies the signatures and agrees the
/// same secret, the Security module's ECIES opens through the TPM.
final class TPMKeyTests: TPMTestCase {
    func testNothingStartsBeforeTheFirstRequest() throws {
        let tpm = try sharedTPM()
        let client = try client(tpm)
        XCTAssertNil(client.helperProcessID)
        let info = try client.probe()
        XCTAssertNotNil(client.helperProcessID)
        XCTAssertEqual(info.family, "2.0")
        XCTAssertEqual(info.manufacturer, "IBM")
        XCTAssertEqual(info.vendor, "SW   TPM")
        XCTAssertTrue(info.hasP256)
        XCTAssertGreaterThan(info.revision, 100)
        let pid = client.helperProcessID!
        client.close()
        XCTAssertNil(client.helperProcessID)
        XCTAssertTrue(isGone(pid), "the helper was reaped")
    }

    func testAKeyMadeInTheTPMSignsWhatOpenSSLVerifies() throws {
        let tpm = try sharedTPM()
        let client = try client(tpm)
        let key = try client.createKey()
        XCTAssertEqual(key.file.kind, .loadable)
        XCTAssertTrue(key.file.emptyAuth)
        XCTAssertEqual(key.file.parent, 0x4000_0001)
        // The public part is all the file says of the key: the TPM wrapped the rest.
        let message = Array("the message signed in the TPM".utf8)
        let signature = try client.sign(message, algorithm: .ecdsaMessageX962SHA256, with: key)
        write("public.pem", Array(key.publicKey.publicKeyPEM.utf8))
        write("message", message)
        write("signature.der", signature)
        let verified = try Tools.must("openssl", ["dgst", "-sha256", "-verify", "public.pem", "-signature", "signature.der", "message"], in: fixture.dir)
        XCTAssertEqual(verified.text, "Verified OK\n")
        XCTAssertTrue(try key.publicKey.verify(signature: signature, for: message, algorithm: .ecdsaMessageX962SHA256))
        // A digest signed as a digest is the same signature scheme.
        let digest = try client.sign(Digest.sha256(message), algorithm: .ecdsaDigestX962SHA256, with: key)
        XCTAssertTrue(try key.publicKey.verify(signature: digest, for: message, algorithm: .ecdsaMessageX962SHA256))
        assertKeychainError(.param) { try client.sign(message, algorithm: .ecdsaMessageX962SHA384, with: key) }
        assertKeychainError(.param) { try client.sign(digest: [1, 2, 3], with: key) }
    }

    func testECDHWithAnOpenSSLPeerAgreesTheSameSecret() throws {
        let tpm = try sharedTPM()
        let client = try client(tpm)
        let key = try client.createKey()
        try Tools.must("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "peer.pem"], in: fixture.dir)
        try Tools.must("openssl", ["pkey", "-in", "peer.pem", "-pubout", "-outform", "DER", "-out", "peer.pub.der"], in: fixture.dir)
        write("tpm.pub.pem", Array(key.publicKey.publicKeyPEM.utf8))
        try Tools.must("openssl", ["pkeyutl", "-derive", "-inkey", "peer.pem", "-peerkey", "tpm.pub.pem", "-out", "openssl.secret"], in: fixture.dir)
        let peer = try AsymmetricKey(subjectPublicKeyInfo: try read("peer.pub.der"))
        let shared = try client.sharedSecret(with: peer, key: key)
        XCTAssertEqual(shared.withUnsafeBytes { Array($0) }, try read("openssl.secret"))
        // A P-384 peer is refused before the TPM sees it.
        try Tools.must("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", "p384.pem"], in: fixture.dir)
        try Tools.must("openssl", ["pkey", "-in", "p384.pem", "-pubout", "-outform", "DER", "-out", "p384.pub.der"], in: fixture.dir)
        let p384 = try AsymmetricKey(subjectPublicKeyInfo: try read("p384.pub.der"))
        assertKeychainError(.param) { try client.sharedSecret(with: p384, key: key) }
    }

    /// Apple's ECIES (what SecKeyCreateEncryptedData makes for a Secure
    /// Enclave key's public key) decrypted with the ECDH in the TPM.
    func testECIESEncryptedToTheKeyDecryptsThroughTheTPM() throws {
        let tpm = try sharedTPM()
        let client = try client(tpm)
        let key = try client.createKey()
        let plaintext = Array("a secret for the enclave".utf8)
        let ciphertext = try key.publicKey.encrypt(plaintext, algorithm: .eciesCofactorVariableIVX963SHA256AESGCM)
        XCTAssertEqual(try client.decrypt(ciphertext, with: key).withUnsafeBytes { Array($0) }, plaintext)
        var tampered = ciphertext
        tampered[tampered.count - 1] ^= 1
        assertKeychainError(.decode) { try client.decrypt(tampered, with: key) }
        assertKeychainError(.decode) { try client.decrypt(Array(ciphertext[0..<40]), with: key) }
    }

    /// One helper serves many requests (the agent's case), and many keys.
    func testOneHelperServesManyKeysAndRequests() throws {
        let tpm = try sharedTPM()
        let client = try client(tpm)
        let keys = try (0..<3).map { _ in try client.createKey() }
        let pid = client.helperProcessID
        for (index, key) in keys.enumerated() {
            for round in 0..<3 {
                let message = Array("key \(index) round \(round)".utf8)
                let signature = try client.sign(message, algorithm: .ecdsaMessageX962SHA256, with: key)
                XCTAssertTrue(try key.publicKey.verify(signature: signature, for: message, algorithm: .ecdsaMessageX962SHA256))
                XCTAssertFalse(try keys[(index + 1) % 3].publicKey.verify(signature: signature, for: message, algorithm: .ecdsaMessageX962SHA256))
            }
        }
        XCTAssertEqual(client.helperProcessID, pid)
        // Nothing stays in the TPM once the helper is done: no object, no
        // session (swtpm has no resource manager to flush them).
        client.close()
        for kind in ["handles-transient", "handles-loaded-session"] {
            let handles = try tpm2Tool("tpm2_getcap", [kind], on: tpm)
            XCTAssertEqual(handles.text, "", kind)
        }
    }
}
