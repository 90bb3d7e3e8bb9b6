import Foundation
@testable import LocketCore
import XCTest

// A file that asks for an absurd amount of key-derivation work (PKCS#12 MAC,
// encrypted safes and shrouded key bags, encrypted PKCS#8, OpenSSH bcrypt
// rounds) is refused at once, before any passphrase is tried: without the
// check, libcrypto would spend hours on a count the file's maker chose.
// The files are made by openssl and ssh-keygen with a modest count, then the
// count is rewritten in place (same encoded length) to one over the limit.
final class KeysSlowFileTests: KeysTestCase {
    override class func prepare(_ fixture: KeysFixture) throws {
        try fixture.genpkey("p256", "p256.key")
        try fixture.makeLeaf(key: "p256.key", cert: "p256.pem", cn: "p256.example.com")
    }

    /// 100000 as a DER INTEGER, and 8388607 in the same five bytes.
    static let modest: [UInt8] = [0x02, 0x03, 0x01, 0x86, 0xA0]
    static let absurd: [UInt8] = [0x02, 0x03, 0x7F, 0xFF, 0xFF]

    func replacing(_ pattern: [UInt8], with replacement: [UInt8], in bytes: [UInt8], expected: Int,
                   file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
        var out = bytes, count = 0, i = 0
        while i + pattern.count <= out.count {
            if Array(out[i..<(i + pattern.count)]) == pattern {
                out.replaceSubrange(i..<(i + pattern.count), with: replacement)
                count += 1
                i += pattern.count
            } else {
                i += 1
            }
        }
        XCTAssertEqual(count, expected, "occurrences of the count in the file", file: file, line: line)
        return out
    }

    /// Refused with errSecDecode naming the limit, quickly, without asking for the passphrase.
    func assertRefusedAtOnce(_ bytes: [UInt8], mentioning words: [String], file: StaticString = #filePath, line: UInt = #line) {
        let started = Date()
        let error = assertKeychainError(.decode, file: file, line: line) { try KeyImport.parse(bytes, passphrase: noPassphrase) }
        XCTAssertLessThan(Date().timeIntervalSince(started), 2, "refused before any key derivation", file: file, line: line)
        for word in words {
            XCTAssertTrue(error?.message.contains(word) ?? false, "'\(word)' in \(String(describing: error))", file: file, line: line)
        }
    }

    func pkcs12(_ name: String, _ extra: [String]) throws -> [UInt8] {
        try Tools.must("openssl", ["pkcs12", "-export", "-inkey", f.path("p256.key"), "-in", f.path("p256.pem"),
                                   "-passout", "file:" + f.passFile, "-iter", "100000", "-out", f.path(name)] + extra)
        return try f.read(name)
    }

    func testPKCS12MACIterationsAreCheckedBeforeAnyPassphraseIsTried() throws {
        let made = try pkcs12("mac.p12", [])
        // The file imports as made (100000 iterations everywhere).
        XCTAssertEqual(try KeyImport.parse(made, passphrase: { try SecureBytes(copying: Array(self.f.passphrase.utf8)) }).keys.count, 1)
        assertRefusedAtOnce(replacing(Self.modest, with: Self.absurd, in: made, expected: 3),
                            mentioning: ["PKCS#12", "8388607", "2000000"])
    }

    func testPKCS12EncryptedSafeIsCheckedBeforeItIsDecrypted() throws {
        // Without a MAC, openssl leaves certificates in the clear unless told.
        let made = try pkcs12("safe.p12", ["-nomac", "-certpbe", "AES-256-CBC"])
        let bytes = replacing(Self.modest, with: Self.absurd, in: made, expected: 2)
        let started = Date()
        let error = assertKeychainError(.decode) {
            try KeyImport.parse(bytes, passphrase: { try SecureBytes(copying: Array(self.f.passphrase.utf8)) })
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 2)
        XCTAssertTrue(error?.message.contains("8388607") ?? false, "\(String(describing: error))")
    }

    func testPKCS12ShroudedKeyBagIsChecked() throws {
        // Certificates in the clear: the only derivation is the key bag's.
        let made = try pkcs12("bag.p12", ["-nomac", "-certpbe", "NONE"])
        let bytes = replacing(Self.modest, with: Self.absurd, in: made, expected: 1)
        let error = assertKeychainError(.decode) {
            try KeyImport.parse(bytes, passphrase: { try SecureBytes(copying: Array(self.f.passphrase.utf8)) })
        }
        XCTAssertTrue(error?.message.contains("8388607") ?? false, "\(String(describing: error))")
    }

    func testEncryptedPKCS8IsChecked() throws {
        try Tools.must("openssl", ["pkcs8", "-topk8", "-in", f.path("p256.key"), "-v2", "aes-256-cbc", "-iter", "100000",
                                   "-passout", "file:" + f.passFile, "-outform", "DER", "-out", f.path("k8.der")])
        let made = try f.read("k8.der")
        XCTAssertEqual(try KeyImport.parse(made, passphrase: { try SecureBytes(copying: Array(self.f.passphrase.utf8)) }).keys.count, 1)
        let bytes = replacing(Self.modest, with: Self.absurd, in: made, expected: 1)
        let error = assertKeychainError(.decode) {
            try KeyImport.parse(bytes, passphrase: { try SecureBytes(copying: Array(self.f.passphrase.utf8)) })
        }
        XCTAssertTrue(error?.message.contains("8388607") ?? false, "\(String(describing: error))")
    }

    func testOpenSSHBcryptRoundsAreChecked() throws {
        try Tools.must("ssh-keygen", ["-q", "-t", "ed25519", "-a", "16", "-N", f.passphrase, "-C", "", "-f", f.path("id")])
        let text = String(decoding: try f.read("id"), as: UTF8.self)
        let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        var blob = [UInt8](try XCTUnwrap(Data(base64Encoded: body)))
        // kdfname "bcrypt", then kdfoptions: length 24, salt (length 16, 16 bytes), rounds.
        let marker: [UInt8] = Array("bcrypt".utf8) + [0, 0, 0, 24, 0, 0, 0, 16]
        let at = try XCTUnwrap((0...(blob.count - marker.count)).first { Array(blob[$0..<($0 + marker.count)]) == marker })
        let rounds = at + marker.count + 16
        XCTAssertEqual(Array(blob[rounds..<(rounds + 4)]), [0, 0, 0, 16])
        blob.replaceSubrange(rounds..<(rounds + 4), with: [0, 0x10, 0, 0])
        let armored = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + Data(blob).base64EncodedString(options: .lineLength64Characters)
            + "\n-----END OPENSSH PRIVATE KEY-----\n"
        assertRefusedAtOnce(Array(armored.utf8), mentioning: ["1048576", "1024", "ssh-keygen -p"])
    }

    // MARK: - The limits themselves, on algorithm identifiers built here

    static func der(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] { DER.header(tag, contents.count) + contents }
    static func sequence(_ parts: [UInt8]...) -> [UInt8] { der(0x30, parts.flatMap { $0 }) }
    static func oid(_ bytes: [UInt8]) -> [UInt8] { der(0x06, bytes) }
    static func integer(_ value: Int) -> [UInt8] {
        var bytes = withUnsafeBytes(of: UInt64(value).bigEndian) { Array($0) }.drop { $0 == 0 }
        if bytes.first.map({ $0 & 0x80 != 0 }) ?? true { bytes.insert(0, at: bytes.startIndex) }
        return der(0x02, Array(bytes))
    }
    static let salt = der(0x04, [UInt8](repeating: 7, count: 8))
    static let rsadsi: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01]
    static func pbes2(_ kdf: [UInt8]) -> [UInt8] {
        let aes256CBC = sequence(oid([0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x01, 0x2A]), der(0x04, [UInt8](repeating: 1, count: 16)))
        return sequence(oid(rsadsi + [0x05, 0x0D]), sequence(kdf, aes256CBC))
    }
    static func pbkdf2(_ iterations: Int) -> [UInt8] { sequence(oid(rsadsi + [0x05, 0x0C]), sequence(salt, integer(iterations))) }
    static func scrypt(n: Int, r: Int, p: Int) -> [UInt8] {
        sequence(oid([0x2B, 0x06, 0x01, 0x04, 0x01, 0xDA, 0x47, 0x04, 0x0B]), sequence(salt, integer(n), integer(r), integer(p)))
    }

    func check(_ der: [UInt8]) throws { try PasswordWork.check(algorithmIdentifier: der, what: "test file") }

    func testLimitsOfEachScheme() throws {
        let limit = PasswordWork.maximumIterations
        XCTAssertNoThrow(try check(Self.pbes2(Self.pbkdf2(limit))))
        assertKeychainError(.decode) { try self.check(Self.pbes2(Self.pbkdf2(limit + 1))) }
        XCTAssertNoThrow(try check(Self.pbes2(Self.scrypt(n: 1 << 14, r: 8, p: 1))))
        assertKeychainError(.decode) { try self.check(Self.pbes2(Self.scrypt(n: 1 << 20, r: 8, p: 1))) }
        assertKeychainError(.decode) { try self.check(Self.pbes2(Self.scrypt(n: 1 << 14, r: 8, p: 1 << 30))) }
        // PKCS#12's own PBE (pbeWithSHAAnd3-KeyTripleDES-CBC) and PBES1 (pbeWithSHA1AndDES-CBC).
        for scheme in [Self.rsadsi + [0x0C, 0x01, 0x03], Self.rsadsi + [0x05, 0x0A]] {
            XCTAssertNoThrow(try check(Self.sequence(Self.oid(scheme), Self.sequence(Self.salt, Self.integer(2048)))))
            assertKeychainError(.decode) { try self.check(Self.sequence(Self.oid(scheme), Self.sequence(Self.salt, Self.integer(1 << 40)))) }
        }
        // A count too long for any integer type is refused, not wrapped.
        let huge = Self.der(0x02, [0x01] + [UInt8](repeating: 0, count: 20))
        assertKeychainError(.decode) {
            try self.check(Self.pbes2(Self.sequence(Self.oid(Self.rsadsi + [0x05, 0x0C]), Self.sequence(Self.salt, huge))))
        }
        // Not password-based: libcrypto's to judge.
        XCTAssertNoThrow(try check(Self.sequence(Self.oid([0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x01, 0x2A]))))
    }

    func testMalformedParametersAreRefused() {
        let pbkdf2OID = Self.oid(Self.rsadsi + [0x05, 0x0C])
        for bad in [
            Self.pbes2([]),                                                         // no KDF
            Self.sequence(pbkdf2OID),                                               // no parameters
            Self.sequence(pbkdf2OID, Self.sequence(Self.salt)),                     // no count
            Self.sequence(pbkdf2OID, Self.sequence(Self.salt, Self.der(0x02, [0xFF]))), // negative
            Self.sequence(pbkdf2OID, Self.sequence(Self.salt, Self.integer(0))),    // zero
            Self.sequence(pbkdf2OID, Self.sequence(Self.salt, Self.integer(1))) + [0], // trailing byte
            [0x30, 0x05, 0x06],                                                     // truncated
        ] {
            assertKeychainError(.decode) { try self.check(bad) }
        }
    }
}
