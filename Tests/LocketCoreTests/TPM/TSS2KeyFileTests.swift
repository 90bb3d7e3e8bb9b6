import LocketCore
import LocketSupport
import XCTest

/// The TCG key file (TSS2 PRIVATE KEY) read and written without a TPM, and
/// the public area read from it: every malformed or hostile input is a
/// clean errSecDecode (SPEC §21; the TPM suites prove the real TPM's files).
final class TSS2KeyFileTests: XCTestCase {
    /// A TPM2B_PUBLIC as the TPM makes a locket key: ECC P-256, SHA-256 name,
    /// fixedTPM|fixedParent|sensitiveDataOrigin|userWithAuth|sign|decrypt
    /// (+ noDA), null symmetric, scheme and KDF, the point (x, y).
    static func keyPublicArea(x: [UInt8] = P256.x, y: [UInt8] = P256.y, attributes: UInt32 = 0x0006_0472, scheme: [UInt8] = [0x00, 0x10]) -> [UInt8] {
        var area: [UInt8] = [0x00, 0x23, 0x00, 0x0b]
        area += withUnsafeBytes(of: attributes.bigEndian, Array.init)
        area += [0x00, 0x00]  // authPolicy
        area += [0x00, 0x10] + scheme + [0x00, 0x03] + [0x00, 0x10]  // symmetric, scheme, curve, kdf
        area += [0x00, UInt8(x.count)] + x + [0x00, UInt8(y.count)] + y
        return [UInt8(area.count >> 8), UInt8(area.count & 0xff)] + area
    }

    /// A point on P-256 (the generator), so the public key imports.
    enum P256 {
        static let x = Hex.decode("6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296")!
        static let y = Hex.decode("4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")!
    }

    static let privateArea: [UInt8] = [0x00, 0x04, 0xde, 0xad, 0xbe, 0xef]

    func sample(emptyAuth: Bool = true) -> TSS2KeyFile {
        TSS2KeyFile(kind: .loadable, emptyAuth: emptyAuth, publicArea: Self.keyPublicArea(), privateArea: Self.privateArea)
    }

    func testRoundTripsThroughDERAndPEM() throws {
        for file in [sample(), sample(emptyAuth: false),
                     TSS2KeyFile(kind: .sealed, emptyAuth: false, policy: [.init(commandCode: 0x17f, commandPolicy: [0, 0, 0, 0, 0, 1, 0, 0x0b, 3, 0, 0, 1]),
                                                                           .init(commandCode: 0x16b, commandPolicy: [])],
                                 description: "device secret", publicArea: [0, 1, 7], privateArea: [0, 1, 9])] {
            XCTAssertEqual(try TSS2KeyFile(der: file.der), file)
            XCTAssertEqual(try TSS2KeyFile(pem: Array(file.pem.utf8)), file)
            XCTAssertTrue(file.pem.hasPrefix("-----BEGIN TSS2 PRIVATE KEY-----\n"))
        }
    }

    /// The DER, byte for byte: the OID, emptyAuth written even when FALSE
    /// (tpm2-openssl before 1.3 reads an absent one as TRUE), the owner
    /// parent as a 4-byte INTEGER, the two TPM2Bs.
    func testTheEncodingIsTheOneTheToolsRead() throws {
        let der = sample(emptyAuth: false).der
        XCTAssertEqual(Array(der[2..<10]), [0x06, 0x06, 0x67, 0x81, 0x05, 0x0a, 0x01, 0x03])
        XCTAssertEqual(Array(der[10..<15]), [0xa0, 0x03, 0x01, 0x01, 0x00])
        XCTAssertEqual(Array(der[15..<21]), [0x02, 0x04, 0x40, 0x00, 0x00, 0x01])
        XCTAssertEqual(Array(sample().der[10..<15]), [0xa0, 0x03, 0x01, 0x01, 0xff])
        // A persistent parent (0x81000001) needs a leading zero to stay positive.
        let persistent = TSS2KeyFile(kind: .loadable, emptyAuth: true, parent: 0x8100_0001, publicArea: Self.keyPublicArea(), privateArea: Self.privateArea)
        XCTAssertEqual(try TSS2KeyFile(der: persistent.der).parent, 0x8100_0001)
        XCTAssertTrue(persistent.der.contains([0x02, 0x05, 0x00, 0x81, 0x00, 0x00, 0x01]))
    }

    func testTheKeyReadsItsPublicKeyWithoutATPM() throws {
        let key = try TPMKey(sample())
        XCTAssertEqual(key.publicKey.keyType, .ec)
        XCTAssertEqual(key.publicKey.curve, .p256)
        XCTAssertEqual(key.publicKey.publicKeyExternalRepresentation, [0x04] + P256.x + P256.y)
        XCTAssertFalse(key.needsAuthorization)
        XCTAssertTrue(key.canAgree)
        XCTAssertTrue(try TPMKey(sample(emptyAuth: false)).needsAuthorization)
    }

    func testKeysLocketCanNotUseAreRefusedByName() throws {
        let sealed = TSS2KeyFile(kind: .sealed, emptyAuth: true, publicArea: Self.keyPublicArea(), privateArea: Self.privateArea)
        assertDecode(try TPMKey(sealed), "sealed secret")
        let persistent = TSS2KeyFile(kind: .loadable, emptyAuth: true, parent: 0x8100_0001, publicArea: Self.keyPublicArea(), privateArea: Self.privateArea)
        assertDecode(try TPMKey(persistent), "0x81000001")
        // Restricted (an attestation key), and one without fixedTPM (duplicable).
        for attributes: UInt32 in [0x0007_0472, 0x0006_0470] {
            let file = TSS2KeyFile(kind: .loadable, emptyAuth: true, publicArea: Self.keyPublicArea(attributes: attributes), privateArea: Self.privateArea)
            assertDecode(try TPMKey(file), "fixed to its TPM")
        }
        // A point that is not on the curve.
        let offCurve = TSS2KeyFile(kind: .loadable, emptyAuth: true, publicArea: Self.keyPublicArea(y: P256.x), privateArea: Self.privateArea)
        XCTAssertThrowsError(try TPMKey(offCurve)) { XCTAssertEqual(($0 as? KeychainError)?.code, .decode) }
    }

    /// Every truncation and every single-byte change of a valid file, and
    /// hostile shapes: errSecDecode or a file that reads (a changed byte
    /// inside a blob is not the file's to notice), never a crash.
    func testEveryTruncationAndFlippedByteIsACleanDecodeError() throws {
        let der = sample().der
        for length in 0..<der.count {
            XCTAssertThrowsError(try TSS2KeyFile(der: Array(der[0..<length]))) { XCTAssertEqual(($0 as? KeychainError)?.code, .decode, "length \(length)") }
        }
        for index in der.indices {
            for flip: UInt8 in [0x01, 0x80, 0xff] {
                var bad = der
                bad[index] ^= flip
                do {
                    let file = try TSS2KeyFile(der: bad)
                    _ = try? TPMKey(file)
                } catch let error as KeychainError {
                    XCTAssertEqual(error.code, .decode, "byte \(index) ^ \(flip): \(error)")
                }
            }
        }
        XCTAssertThrowsError(try TSS2KeyFile(der: der + [0])) { XCTAssertEqual(($0 as? KeychainError)?.code, .decode) }
    }

    func testHostileShapes() throws {
        let oid: [UInt8] = [0x06, 0x06, 0x67, 0x81, 0x05, 0x0a, 0x01, 0x03]
        let blobs: [UInt8] = [0x02, 0x04, 0x40, 0x00, 0x00, 0x01, 0x04, 0x03, 0x00, 0x01, 0x00, 0x04, 0x03, 0x00, 0x01, 0x00]
        func sequence(_ body: [UInt8]) -> [UInt8] { [0x30] + lengthBytes(body.count) + body }
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("a length of 4 GiB", [0x30, 0x84, 0xff, 0xff, 0xff, 0xff]),
            ("an indefinite length", [0x30, 0x80] + oid + blobs + [0, 0]),
            ("an importable key", sequence([0x06, 0x06, 0x67, 0x81, 0x05, 0x0a, 0x01, 0x04] + blobs)),
            ("an unknown OID", sequence([0x06, 0x03, 0x2a, 0x03, 0x04] + blobs)),
            ("a negative parent", sequence(oid + [0x02, 0x01, 0xff, 0x04, 0x03, 0x00, 0x01, 0x00, 0x04, 0x03, 0x00, 0x01, 0x00])),
            ("a 40-bit parent", sequence(oid + [0x02, 0x05, 0x01, 0x00, 0x00, 0x00, 0x00, 0x04, 0x03, 0x00, 0x01, 0x00, 0x04, 0x03, 0x00, 0x01, 0x00])),
            ("a TPM2B whose size lies", sequence(oid + [0x02, 0x04, 0x40, 0x00, 0x00, 0x01, 0x04, 0x03, 0x00, 0x09, 0x00, 0x04, 0x03, 0x00, 0x01, 0x00])),
            ("an import secret", sequence(oid + [0xa2, 0x03, 0x04, 0x01, 0x00] + blobs)),
            ("signed policies", sequence(oid + [0xa3, 0x02, 0x30, 0x00] + blobs)),
            ("an RSA parent", sequence(oid + [0xa5, 0x03, 0x01, 0x01, 0xff] + blobs)),
            ("fields out of order", sequence(oid + [0xa1, 0x02, 0x30, 0x00, 0xa0, 0x03, 0x01, 0x01, 0xff] + blobs)),
            ("emptyAuth that is not a BOOLEAN", sequence(oid + [0xa0, 0x03, 0x02, 0x01, 0x01] + blobs)),
            ("a policy step without its command", sequence(oid + [0xa1, 0x06, 0x30, 0x04, 0x30, 0x02, 0xa1, 0x00] + blobs)),
            ("a description that is not UTF-8", sequence(oid + [0xa4, 0x04, 0x0c, 0x02, 0xc3, 0x28] + blobs)),
            ("a field missing", sequence(oid + [0x02, 0x04, 0x40, 0x00, 0x00, 0x01, 0x04, 0x03, 0x00, 0x01, 0x00])),
            ("a multi-byte tag", sequence(oid + [0x1f, 0x81, 0x01, 0x00] + blobs)),
        ]
        for (what, der) in cases {
            XCTAssertThrowsError(try TSS2KeyFile(der: der), what) { XCTAssertEqual(($0 as? KeychainError)?.code, .decode, what) }
        }
        let pems: [(String, String)] = [
            ("no block", "hello"),
            ("another label", "-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n"),
            ("no END line", "-----BEGIN TSS2 PRIVATE KEY-----\nMAA=\n"),
            ("not base64", "-----BEGIN TSS2 PRIVATE KEY-----\n!!!!\n-----END TSS2 PRIVATE KEY-----\n"),
            ("a megabyte", String(repeating: "A", count: 1 << 20)),
        ]
        for (what, text) in pems {
            XCTAssertThrowsError(try TSS2KeyFile(pem: Array(text.utf8)), what) { XCTAssertEqual(($0 as? KeychainError)?.code, .decode, what) }
        }
    }

    func testThePublicAreaReaderRefusesWhatLocketDoesNotMake() throws {
        let good = Self.keyPublicArea()
        XCTAssertNoThrow(try TPMPublicArea(good))
        for length in 0..<good.count {
            XCTAssertThrowsError(try TPMPublicArea(Array(good[0..<length]))) { XCTAssertEqual(($0 as? KeychainError)?.code, .decode) }
        }
        // An RSA key, P-384, an ECDAA scheme, a 31-byte coordinate, a SHA-1 name.
        var rsa = good
        rsa[3] = 0x01
        var p384 = good
        p384[17] = 0x04
        var sha1 = good
        sha1[5] = 0x04
        for (what, area) in [("RSA", rsa), ("P-384", p384), ("ECDAA", Self.keyPublicArea(scheme: [0x00, 0x1a, 0x00, 0x0b])),
                             ("short x", Self.keyPublicArea(x: Array(P256.x.dropFirst()))), ("SHA-1 name", sha1), ("trailing", good + [0])] {
            XCTAssertThrowsError(try TPMPublicArea(area), what) { XCTAssertEqual(($0 as? KeychainError)?.code, .decode, what) }
        }
    }

    func assertDecode(_ body: @autoclosure () throws -> some Any, _ words: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .decode, file: file, line: line)
            XCTAssertTrue("\(error)".contains(words), "\(error)", file: file, line: line)
        }
    }

    private func lengthBytes(_ count: Int) -> [UInt8] { count < 0x80 ? [UInt8(count)] : [0x81, UInt8(count)] }
}
