import Foundation
@testable import LocketCore
import XCTest

// Bad input for every format import reads: garbage, truncation at many
// points, flipped bytes, oversize. Each gives one KeychainError (no
// libcrypto error code in its text), never a crash or a hang.
final class KeysBadInputTests: KeysTestCase {
    /// Valid files of each format, by name.
    nonisolated(unsafe) static var samples: [String: [UInt8]] = [:]

    override class func prepare(_ f: KeysFixture) throws {
        try f.genpkey("p256", "p256.key")
        try f.genpkey("rsa2048", "rsa.key")
        try f.makeLeaf(key: "p256.key", cert: "p256.pem", cn: "bad.example.com")
        try Tools.must("openssl", ["pkcs12", "-export", "-inkey", f.path("p256.key"), "-in", f.path("p256.pem"), "-passout", "file:" + f.passFile, "-out", f.path("id.p12")])
        try Tools.must("openssl", ["pkcs8", "-topk8", "-in", f.path("rsa.key"), "-v2", "aes-256-cbc", "-passout", "file:" + f.passFile, "-out", f.path("enc.pem")])
        try Tools.must("openssl", ["x509", "-in", f.path("p256.pem"), "-outform", "DER", "-out", f.path("cert.der")])
        try Tools.must("openssl", ["pkey", "-in", f.path("rsa.key"), "-outform", "DER", "-out", f.path("key.der")])
        let ed = try AsymmetricKey.generate(.ed25519)
        try f.write("plain.ssh", try ed.openSSHPrivateKey(comment: "c").bytes)
        // 2 bcrypt_pbkdf rounds, not 16: each flip that reaches the KDF costs one, seconds at 16 in the test build.
        try f.write("enc.ssh", try AsymmetricKey.generate(.p256).openSSHPrivateKey(comment: "c", passphrase: f.pass, rounds: 2).bytes)
        for name in ["id.p12", "enc.pem", "cert.der", "key.der", "p256.pem", "p256.key", "plain.ssh", "enc.ssh"] {
            samples[name] = try f.read(name)
        }
        samples["bundle.pem"] = samples["p256.pem"]! + samples["p256.key"]!
    }

    override class func tearDown() {
        samples = [:]
        super.tearDown()
    }

    /// Parses `bytes`; success or a KeychainError are both fine, anything else fails the test.
    @discardableResult
    func parseQuietly(_ bytes: [UInt8], format: KeyFileFormat? = nil, _ context: String) -> KeychainError? {
        do {
            _ = try KeyImport.parse(bytes, format: format, passphrase: { try self.f.pass })
            return nil
        } catch let error as KeychainError {
            XCTAssertFalse(error.description.contains("error:"), "\(context): \(error)")
            XCTAssertFalse(error.description.isEmpty)
            return error
        } catch {
            XCTFail("\(context): not a KeychainError: \(error)")
            return nil
        }
    }

    func testSamplesParse() throws {
        for (name, bytes) in Self.samples {
            XCTAssertNil(parseQuietly(bytes, name), name)
        }
    }

    func testGarbage() throws {
        let urandom = FileHandle(forReadingAtPath: "/dev/urandom")!
        let tenMB = [UInt8](urandom.readData(ofLength: 10 * 1024 * 1024))
        try urandom.close()
        let error = parseQuietly(tenMB, "10 MB of random bytes")
        XCTAssertEqual(error?.code, .decode)
        for format in KeyFileFormat.allCases {
            XCTAssertNotNil(parseQuietly(Array(tenMB.prefix(4096)), format: format, "4 KB garbage as \(format)"))
        }
        // Garbage that starts like each format.
        let starts: [[UInt8]] = [[0x30, 0x82, 0xff, 0xff], Array("-----BEGIN CERTIFICATE-----\n".utf8), Array("openssh-key-v1\0".utf8),
                                 Array("ssh-ed25519 AAAA!!".utf8), [0x30, 0x80], [0x30]]
        for start in starts {
            let error = parseQuietly(start + tenMB.prefix(1000), "garbage after \(start.prefix(8))")
            XCTAssertNotNil(error)
        }
        assertKeychainError(.decode) { try KeyImport.parse([UInt8](), passphrase: noPassphrase) }
        assertKeychainError(.dataTooLarge) { try KeyImport.parse([UInt8](repeating: 0x30, count: KeyImport.maximumInputLength + 1), passphrase: noPassphrase) }
    }

    func testTruncatedFiles() throws {
        for (name, bytes) in Self.samples {
            var cuts = Set([1, 2, 16, bytes.count / 3, bytes.count / 2, bytes.count - 40, bytes.count - 2])
            if !name.hasSuffix(".pem") && !name.hasSuffix(".key") && !name.hasSuffix(".ssh") { cuts.insert(bytes.count - 1) }
            for cut in cuts where cut > 0 && cut < bytes.count {
                let error = parseQuietly(Array(bytes.prefix(cut)), "\(name) cut at \(cut)")
                XCTAssertNotNil(error, "\(name) cut at \(cut) of \(bytes.count) parsed")
            }
        }
        let pem = String(decoding: Self.samples["p256.pem"]!, as: UTF8.self)
        let noEnd = pem.replacingOccurrences(of: "-----END CERTIFICATE-----", with: "")
        let error = assertKeychainError(.decode) { try KeyImport.parse(Array(noEnd.utf8), passphrase: noPassphrase) }
        XCTAssertTrue(error?.message.contains("no END line") ?? false)
    }

    /// Bit flips all over each file: a flip may leave a valid file (a
    /// certificate's signature bytes are not checked at import), never a crash.
    func testFlippedBytes() throws {
        for (name, bytes) in Self.samples {
            // Each flip of the encrypted OpenSSH key costs a bcrypt_pbkdf: fewer of them.
            let step = max(1, bytes.count / (name == "enc.ssh" ? 9 : 97))
            var errors = 0
            for i in stride(from: 0, to: bytes.count, by: step) {
                var flipped = bytes
                flipped[i] ^= 0x55
                if parseQuietly(flipped, "\(name) flipped at \(i)") != nil { errors += 1 }
            }
            XCTAssertGreaterThan(errors, 0, name)
        }
        // Encrypted containers detect any flip in the ciphertext: wrong passphrase or corrupt.
        var p12 = Self.samples["id.p12"]!
        p12[p12.count / 2] ^= 1
        XCTAssertNotNil(parseQuietly(p12, "id.p12 flipped in the middle"))
    }

    func testOpenSSHPrivateKeyContainerErrors() throws {
        // A file whose private section names a cipher locket does not read.
        let plain = Self.samples["plain.ssh"]!
        let items = try KeyImport.parse(plain, passphrase: noPassphrase)
        XCTAssertEqual(items.keys.count, 1)
        let text = String(decoding: plain, as: UTF8.self)
        let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        var binary = [UInt8](Data(base64Encoded: body)!)
        // "none" (the cipher name at offset 15 + 4) becomes "nonf".
        XCTAssertEqual(Array(binary[19..<23]), Array("none".utf8))
        binary[22] = UInt8(ascii: "f")
        let error = assertKeychainError(.param) { try KeyImport.parse(binary, format: .openssh, passphrase: noPassphrase) }
        XCTAssertTrue(error?.message.contains("nonf") ?? false)
    }
}
