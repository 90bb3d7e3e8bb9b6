import Foundation
@testable import LocketCore
import XCTest

// sign/verify and encrypt/decrypt (SPEC 13) against openssl in both
// directions: every locket signature verifies with `openssl dgst -verify` or
// `openssl pkeyutl -verify`, every openssl signature verifies with locket's,
// RSA-OAEP round-trips through `openssl pkeyutl`.
final class KeysOperationTests: KeysTestCase {
    nonisolated(unsafe) static var keys: [String: AsymmetricKey] = [:]

    override class func prepare(_ fixture: KeysFixture) throws {
        for kind in ["rsa2048", "p256", "p384", "p521", "ed25519", "x25519"] {
            try fixture.genpkey(kind, kind + ".key")
            try Tools.must("openssl", ["pkey", "-in", fixture.path(kind + ".key"), "-pubout", "-out", fixture.path(kind + ".pub")])
            keys[kind] = try KeyImport.parse(try fixture.read(kind + ".key"), passphrase: noPassphrase).keys[0].key
        }
        try fixture.write("message", Array("the quick brown fox jumps over the lazy dog\n".utf8))
    }

    override class func tearDown() {
        keys = [:]
        super.tearDown()
    }
    var message: [UInt8] { Array("the quick brown fox jumps over the lazy dog\n".utf8) }

    /// openssl's options for an RSA signature algorithm.
    func sigopts(_ algorithm: KeyAlgorithm) -> [String] {
        algorithm.rawValue.contains("-pss-") ? ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:digest"] : []
    }

    func digestFlag(_ algorithm: KeyAlgorithm) -> String { "-" + algorithm.digestName!.lowercased() }

    func testMessageSignaturesBothWays() throws {
        let cases: [(String, KeyAlgorithm)] = [
            ("p256", .ecdsaMessageX962SHA256), ("p256", .ecdsaMessageX962SHA384), ("p384", .ecdsaMessageX962SHA384),
            ("p521", .ecdsaMessageX962SHA512), ("p384", .ecdsaMessageX962SHA256),
            ("rsa2048", .rsaSignatureMessagePSSSHA256), ("rsa2048", .rsaSignatureMessagePSSSHA384), ("rsa2048", .rsaSignatureMessagePSSSHA512),
            ("rsa2048", .rsaSignatureMessagePKCS1v15SHA256), ("rsa2048", .rsaSignatureMessagePKCS1v15SHA384), ("rsa2048", .rsaSignatureMessagePKCS1v15SHA512),
        ]
        for (kind, algorithm) in cases {
            let key = Self.keys[kind]!
            let signature = try key.sign(message, algorithm: algorithm)
            try f.write("sig", signature)
            let verified = try Tools.must("openssl", ["dgst", digestFlag(algorithm)] + sigopts(algorithm) + ["-verify", f.path(kind + ".pub"), "-signature", f.path("sig"), f.path("message")])
            XCTAssertTrue(verified.text.contains("Verified OK"), "\(kind) \(algorithm.rawValue)")
            XCTAssertTrue(try key.verify(signature: signature, for: message, algorithm: algorithm))
            XCTAssertTrue(try key.publicKey.verify(signature: signature, for: message, algorithm: algorithm))
            XCTAssertFalse(try key.verify(signature: signature, for: message + [0], algorithm: algorithm))
            // openssl's signature verifies with locket's public key.
            try Tools.must("openssl", ["dgst", digestFlag(algorithm)] + sigopts(algorithm) + ["-sign", f.path(kind + ".key"), "-out", f.path("osig"), f.path("message")])
            XCTAssertTrue(try key.publicKey.verify(signature: try f.read("osig"), for: message, algorithm: algorithm), "\(kind) \(algorithm.rawValue)")
        }
    }

    func testDigestAndEd25519SignaturesBothWays() throws {
        for (kind, algorithm) in [("p256", KeyAlgorithm.ecdsaDigestX962SHA256), ("p384", .ecdsaDigestX962SHA384), ("p521", .ecdsaDigestX962SHA512)] {
            let key = Self.keys[kind]!
            let digest = try Tools.must("openssl", ["dgst", digestFlag(algorithm), "-binary", f.path("message")]).stdout
            try f.write("digest", digest)
            let signature = try key.sign(digest, algorithm: algorithm)
            try f.write("sig", signature)
            let verified = try Tools.must("openssl", ["pkeyutl", "-verify", "-pubin", "-inkey", f.path(kind + ".pub"), "-in", f.path("digest"), "-sigfile", f.path("sig")])
            XCTAssertTrue(verified.text.contains("Signature Verified Successfully"), kind)
            try Tools.must("openssl", ["pkeyutl", "-sign", "-inkey", f.path(kind + ".key"), "-in", f.path("digest"), "-out", f.path("osig")])
            XCTAssertTrue(try key.verify(signature: try f.read("osig"), for: digest, algorithm: algorithm))
            // The message variant of the same hash verifies the same signature.
            let messageAlgorithm = KeyAlgorithm(rawValue: algorithm.rawValue.replacingOccurrences(of: "digest", with: "message"))!
            XCTAssertTrue(try key.verify(signature: signature, for: message, algorithm: messageAlgorithm))
            assertKeychainError(.param) { try key.sign(Array(digest.dropLast()), algorithm: algorithm) }
        }
        let ed = Self.keys["ed25519"]!
        let signature = try ed.sign(message, algorithm: .ed25519)
        XCTAssertEqual(signature.count, 64)
        try f.write("sig", signature)
        let verified = try Tools.must("openssl", ["pkeyutl", "-verify", "-pubin", "-inkey", f.path("ed25519.pub"), "-rawin", "-in", f.path("message"), "-sigfile", f.path("sig")])
        XCTAssertTrue(verified.text.contains("Signature Verified Successfully"))
        try Tools.must("openssl", ["pkeyutl", "-sign", "-inkey", f.path("ed25519.key"), "-rawin", "-in", f.path("message"), "-out", f.path("osig")])
        XCTAssertEqual(try f.read("osig"), signature, "Ed25519 is deterministic")
        XCTAssertTrue(try ed.publicKey.verify(signature: try f.read("osig"), for: message, algorithm: .ed25519))
        var flipped = signature
        flipped[10] ^= 1
        XCTAssertFalse(try ed.verify(signature: flipped, for: message, algorithm: .ed25519))
        XCTAssertFalse(try ed.verify(signature: [1, 2, 3], for: message, algorithm: .ed25519))
    }

    func testRSAOAEPBothWays() throws {
        let key = Self.keys["rsa2048"]!
        let secret = Array("a secret of some length".utf8)
        for algorithm in [KeyAlgorithm.rsaEncryptionOAEPSHA1, .rsaEncryptionOAEPSHA256, .rsaEncryptionOAEPSHA384, .rsaEncryptionOAEPSHA512] {
            let md = algorithm.digestName!.lowercased()
            let options = ["-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:\(md)", "-pkeyopt", "rsa_mgf1_md:\(md)"]
            let ciphertext = try key.publicKey.encrypt(secret, algorithm: algorithm)
            XCTAssertEqual(ciphertext.count, 256)
            try f.write("ct", ciphertext)
            let plain = try Tools.must("openssl", ["pkeyutl", "-decrypt", "-inkey", f.path("rsa2048.key"), "-in", f.path("ct")] + options).stdout
            XCTAssertEqual(plain, secret, algorithm.rawValue)
            try f.write("pt", secret)
            try Tools.must("openssl", ["pkeyutl", "-encrypt", "-pubin", "-inkey", f.path("rsa2048.pub"), "-in", f.path("pt"), "-out", f.path("oct")] + options)
            XCTAssertEqual(try key.decrypt(try f.read("oct"), algorithm: algorithm).bytes, secret, algorithm.rawValue)
            var tampered = ciphertext
            tampered[100] ^= 0x40
            assertKeychainError(.decode) { try key.decrypt(tampered, algorithm: algorithm) }
        }
        // The largest plaintext OAEP-SHA256 takes on 2048 bits is 190 bytes.
        XCTAssertNoThrow(try key.encrypt([UInt8](repeating: 7, count: 190), algorithm: .rsaEncryptionOAEPSHA256))
        let error = assertKeychainError(.param) { try key.encrypt([UInt8](repeating: 7, count: 191), algorithm: .rsaEncryptionOAEPSHA256) }
        XCTAssertTrue(error?.message.contains("at most 190 bytes") ?? false)
        assertKeychainError(.param) { try key.publicKey.decrypt([1], algorithm: .rsaEncryptionOAEPSHA256) }
    }

    func testWrongAlgorithmSaysWhatTheKeySupports() throws {
        let ed = Self.keys["ed25519"]!
        let error = assertKeychainError(.param) { try ed.sign(self.message, algorithm: .rsaSignatureMessagePSSSHA256) }
        XCTAssertTrue(error?.message.contains("ed25519 keys support ed25519") ?? false, "\(String(describing: error))")
        let x = Self.keys["x25519"]!
        let xError = assertKeychainError(.param) { try x.sign(self.message, algorithm: .ed25519) }
        XCTAssertTrue(xError?.message.contains("x25519 keys can't sign; they support x25519-sealed-box") ?? false, "\(String(describing: xError))")
        let p256 = Self.keys["p256"]!
        let named = assertKeychainError(.param) { try KeyAlgorithm.named("ecdsa-sha256", for: p256, operation: .sign) }
        XCTAssertTrue(named?.message.contains("ecdsa-message-x962-sha256") ?? false)
        XCTAssertEqual(try KeyAlgorithm.named("ECDSA-MESSAGE-X962-SHA256", for: p256, operation: .sign), .ecdsaMessageX962SHA256)
        assertKeychainError(.param) { try p256.publicKey.sign(self.message, algorithm: .ecdsaMessageX962SHA256) }
        assertKeychainError(.param) { try p256.encrypt(self.message, algorithm: .rsaEncryptionOAEPSHA256) }
        XCTAssertEqual(Self.keys["rsa2048"]!.algorithms(for: .encrypt), [.rsaEncryptionOAEPSHA1, .rsaEncryptionOAEPSHA256, .rsaEncryptionOAEPSHA384,
                                                                         .rsaEncryptionOAEPSHA512, .rsaEncryptionRaw])
        XCTAssertEqual(p256.algorithms(for: .encrypt), [.eciesCofactorVariableIVX963SHA256AESGCM, .eciesStandardVariableIVX963SHA256AESGCM,
                                                        .eciesStandardX963SHA256AESGCM, .eciesCofactorX963SHA256AESGCM])
        XCTAssertEqual(KeyAlgorithm.eciesCofactorVariableIVX963SHA256AESGCM.appleName, "kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA256AESGCM")
    }

    func testSecureInputsAndEmptyMessages() throws {
        let p256 = Self.keys["p256"]!
        let signature = try p256.sign(SecureBytes(copying: message), algorithm: .ecdsaMessageX962SHA256)
        XCTAssertTrue(try p256.verify(signature: signature, for: message, algorithm: .ecdsaMessageX962SHA256))
        let empty = try p256.sign([], algorithm: .ecdsaMessageX962SHA256)
        XCTAssertTrue(try p256.verify(signature: empty, for: [], algorithm: .ecdsaMessageX962SHA256))
        let sealed = try p256.encrypt(SecureBytes(count: 0), algorithm: .eciesCofactorVariableIVX963SHA256AESGCM)
        XCTAssertEqual(try p256.decrypt(sealed, algorithm: .eciesCofactorVariableIVX963SHA256AESGCM).count, 0)
    }
}
