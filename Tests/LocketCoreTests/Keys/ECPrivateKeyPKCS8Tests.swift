import Foundation
@testable import LocketCore
import XCTest

/// EC PKCS#8 read without libcrypto's decoder (issue 14's agent speed-up):
/// openssl's keys and locket's own are recognised, give the key openssl
/// sees, sign what openssl verifies; any other shape is left to the decoder.
final class ECPrivateKeyPKCS8Tests: XCTestCase {
    func testOpenSSLsKeysAreReadAndSignAsOpenSSLSees() throws {
        let f = try KeysFixture()
        try f.write("msg", Array("a message".utf8))
        for (curve, name, algorithm, digest) in [(EllipticCurve.p256, "P-256", KeyAlgorithm.ecdsaMessageX962SHA256, "-sha256"),
                                                 (.p384, "P-384", .ecdsaMessageX962SHA384, "-sha384"),
                                                 (.p521, "P-521", .ecdsaMessageX962SHA512, "-sha512")] {
            _ = try Tools.must("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:\(name)", "-out", f.path("k.pem")])
            _ = try Tools.must("openssl", ["pkcs8", "-topk8", "-nocrypt", "-in", f.path("k.pem"), "-outform", "DER", "-out", f.path("k.der")])
            let der = try f.read("k.der")
            let parts = try XCTUnwrap(der.withUnsafeBytes { ECPrivateKeyPKCS8.split($0) }, name)
            XCTAssertEqual(parts.curve, curve)
            let key = try AsymmetricKey(pkcs8: SecureBytes(copying: der))
            let spki = try Tools.must("openssl", ["pkey", "-in", f.path("k.pem"), "-pubout", "-outform", "DER"]).stdout
            XCTAssertEqual(key.subjectPublicKeyInfo, spki, name)
            XCTAssertEqual(Array(der[parts.point]), key.publicKeyExternalRepresentation, name)
            try f.write("k.pub", Array(spki))
            try f.write("sig", try key.sign(Array("a message".utf8), algorithm: algorithm))
            _ = try Tools.must("openssl", ["dgst", digest, "-verify", f.path("k.pub"), "-keyform", "DER", "-signature", f.path("sig"), f.path("msg")])
            // What the keychain stores (the generic encoder's output) has the same shape.
            let generated = try AsymmetricKey.generate(curve == .p256 ? .p256 : curve == .p384 ? .p384 : .p521)
            XCTAssertNotNil(generated.pkcs8!.bytes.withUnsafeBytes { ECPrivateKeyPKCS8.split($0) }, name)
        }
    }

    func testOtherShapesAreLeftToTheDecoder() throws {
        let der = try AsymmetricKey.generate(.p256).pkcs8!.bytes
        let parts = try XCTUnwrap(der.withUnsafeBytes { ECPrivateKeyPKCS8.split($0) })
        // Each structural byte: lengths, tags, versions, the OIDs, the point's form.
        var structural = [0, 1, 2, 3, 5, 6, 8, 10, 17, 18, 25, 27, 28, 30, 32, 34, 35]
        structural += [parts.scalar.upperBound, parts.point.lowerBound - 1, parts.point.lowerBound]
        for i in structural {
            var changed = der
            changed[i] ^= 0x01
            XCTAssertNil(changed.withUnsafeBytes { ECPrivateKeyPKCS8.split($0) }, "byte \(i) changed")
        }
        XCTAssertNil((der + [0]).withUnsafeBytes { ECPrivateKeyPKCS8.split($0) })
        XCTAssertNil(Array(der.dropLast()).withUnsafeBytes { ECPrivateKeyPKCS8.split($0) })
        XCTAssertNil(try AsymmetricKey.generate(.ed25519).pkcs8!.bytes.withUnsafeBytes { ECPrivateKeyPKCS8.split($0) })
        XCTAssertNil(try AsymmetricKey.runKey("rsa2048").pkcs8!.bytes.withUnsafeBytes { ECPrivateKeyPKCS8.split($0) })
    }
}
