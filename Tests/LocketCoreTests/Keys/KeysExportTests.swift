import Foundation
@testable import LocketCore
import XCTest

// Every export read back by the tool that owns the format: openssl for
// PKCS#8 (plain and encrypted), SPKI and PKCS#12 (without -legacy),
// ssh-keygen for OpenSSH private keys (plain and encrypted) and public lines.
final class KeysExportTests: KeysTestCase {
    nonisolated(unsafe) static var keys: [String: AsymmetricKey] = [:]

    override class func prepare(_ fixture: KeysFixture) throws {
        for type in [KeyGenerationType.p256, .p384, .p521, .ed25519, .x25519] {
            keys[type.rawValue] = try AsymmetricKey.generate(type)
        }
        // The run's RSA key (`TestKeys`): a prime search is no part of an export.
        keys["rsa2048"] = try AsymmetricKey.runKey("rsa2048")
    }

    override class func tearDown() {
        keys = [:]
        super.tearDown()
    }

    func opensslPublicDER(_ file: String, passin: Bool = false) throws -> [UInt8] {
        var args = ["pkey", "-in", f.path(file), "-pubout", "-outform", "DER"]
        if passin { args += ["-passin", "file:" + f.passFile] }
        return try Tools.must("openssl", args).stdout
    }

    func testPKCS8PEMPlainAndEncryptedReadByOpenSSL() throws {
        for (name, key) in Self.keys {
            try f.write(name + ".pem", try key.pkcs8PEM().bytes)
            XCTAssertEqual(try opensslPublicDER(name + ".pem"), key.subjectPublicKeyInfo, name)
            // At locket's 600,000 iterations of PBKDF2 for one key (p256, whose
            // parameters are checked below); at 2,048 for the others, the same
            // container: each run of 600,000 costs a quarter of a second (issue 38).
            let encrypted = name == "p256" ? try key.pkcs8PEM(passphrase: f.pass) : try key.pkcs8PEM(passphrase: f.pass, iterations: 2048)
            XCTAssertTrue(encrypted.bytes.starts(with: Array("-----BEGIN ENCRYPTED PRIVATE KEY-----\n".utf8)))
            try f.write(name + ".enc.pem", encrypted.bytes)
            XCTAssertEqual(try opensslPublicDER(name + ".enc.pem", passin: true), key.subjectPublicKeyInfo, name)
            // And locket reads its own export.
            let back = try KeyImport.parse(encrypted, passphrase: { try self.f.pass })
            XCTAssertEqual(back.keys[0].key.pkcs8?.bytes, key.pkcs8?.bytes)
        }
        // PBES2 with PBKDF2-HMAC-SHA256 and AES-256-CBC, as documented.
        let listing = try Tools.must("openssl", ["asn1parse", "-in", f.path("p256.enc.pem")]).text
        XCTAssertTrue(listing.contains("PBES2"), listing)
        XCTAssertTrue(listing.contains("PBKDF2"), listing)
        XCTAssertTrue(listing.contains("hmacWithSHA256"), listing)
        XCTAssertTrue(listing.contains("aes-256-cbc"), listing)
        XCTAssertTrue(listing.contains(":0927C0"), "600,000 iterations: \(listing)")
        // A wrong passphrase is refused by openssl too (on a key at 2,048
        // iterations, the same container: openssl tries the whole count first).
        try f.write("wrong", Array("wrong".utf8))
        XCTAssertNotEqual(try Tools.run("openssl", ["pkey", "-in", f.path("p384.enc.pem"), "-passin", "file:" + f.path("wrong")]).status, 0)
        assertKeychainError(.param) { try Self.keys["p256"]!.publicKey.pkcs8PEM() }
    }

    /// The cipher, key derivation and its rounds an "openssh-key-v1" file
    /// names in its header (PROTOCOL.key: magic, string cipher, string kdf,
    /// string options = string salt, uint32 rounds).
    private func opensshContainer(_ pem: [UInt8]) throws -> (cipher: String, kdf: String, rounds: UInt32) {
        let body = String(decoding: pem, as: UTF8.self).split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let bytes = [UInt8](try XCTUnwrap(Data(base64Encoded: body)))
        let magic = Array("openssh-key-v1\0".utf8)
        XCTAssertEqual(Array(bytes.prefix(magic.count)), magic)
        var at = magic.count
        func field() -> [UInt8] {
            let length = Int(bytes[at..<at + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            defer { at += 4 + length }
            return Array(bytes[(at + 4)..<(at + 4 + length)])
        }
        let cipher = String(decoding: field(), as: UTF8.self), kdf = String(decoding: field(), as: UTF8.self)
        let options = field()
        let saltLength = Int(options[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        let rounds = options[(4 + saltLength)..<(8 + saltLength)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return (cipher, kdf, rounds)
    }

    func testPublicKeyPEMAndDER() throws {
        for (name, key) in Self.keys {
            try f.write(name + ".pub.pem", Array(key.publicKeyPEM.utf8))
            let der = try Tools.must("openssl", ["pkey", "-pubin", "-in", f.path(name + ".pub.pem"), "-outform", "DER"]).stdout
            XCTAssertEqual(der, key.publicKeyDER, name)
        }
    }

    func testOpenSSHPrivateKeysReadBySSHKeygen() throws {
        guard Tools.find("ssh-keygen") != nil else { throw XCTSkip("ssh-keygen is not installed (make test-deps installs openssh-client)") }
        for name in ["rsa2048", "p256", "p384", "p521", "ed25519"] {
            let key = Self.keys[name]!
            let expected = try key.openSSHPublicKey()
            try f.write(name + ".ssh", try key.openSSHPrivateKey(comment: "exported").bytes)
            let plain = try Tools.must("ssh-keygen", ["-y", "-f", f.path(name + ".ssh")]).text
            XCTAssertTrue(plain.hasPrefix(expected), "\(name): \(plain)")
            // Encrypted: ssh-keygen gets the passphrase from askpass and reads the key.
            // At locket's 16 rounds for one key; at 2 for the others (the same
            // container, and bcrypt_pbkdf at any count is checked against Python's
            // in KeysInteropTests): 16 rounds cost seconds in the test build.
            let encrypted = name == "ed25519" ? try key.openSSHPrivateKey(comment: "exported", passphrase: f.pass)
                : try key.openSSHPrivateKey(comment: "exported", passphrase: f.pass, rounds: 2)
            try f.write(name + ".ssh.enc", encrypted.bytes)
            let decrypted = try Tools.must("ssh-keygen", ["-y", "-f", f.path(name + ".ssh.enc")], environment: f.askpass).text
            XCTAssertTrue(decrypted.hasPrefix(expected), "\(name): \(decrypted)")
            // Without the passphrase ssh-keygen can't.
            try f.write("wrong", Array("wrong".utf8))
            let askWrong = ["SSH_ASKPASS": f.path("askwrong"), "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"]
            try f.write("askwrong", Array("#!/bin/sh\necho wrong\n".utf8))
            try Tools.must("chmod", ["700", f.path("askwrong")])
            XCTAssertNotEqual(try Tools.run("ssh-keygen", ["-y", "-f", f.path(name + ".ssh.enc")], environment: askWrong).status, 0, name)
            // And locket reads both back.
            let back = try KeyImport.parse(try f.read(name + ".ssh.enc"), passphrase: { try self.f.pass })
            XCTAssertEqual(back.keys.count, 1, name)
            XCTAssertEqual(back.keys[0].key.pkcs8?.bytes, key.pkcs8?.bytes, name)
            XCTAssertEqual(back.keys[0].label, "exported")
        }
        // The encrypted export is aes256-ctr with bcrypt, 16 rounds, as ssh-keygen writes
        // (read from the container's header: ed25519's was read whole above).
        let container = try opensshContainer(try f.read("ed25519.ssh.enc"))
        XCTAssertEqual(container.cipher, "aes256-ctr")
        XCTAssertEqual(container.kdf, "bcrypt")
        XCTAssertEqual(container.rounds, 16)
        assertKeychainError(.param) { try Self.keys["x25519"]!.openSSHPrivateKey() }
    }

    func testPKCS12ReadByOpenSSLWithoutLegacy() throws {
        let key = Self.keys["rsa2048"]!
        try f.write("id.key", try key.pkcs8PEM().bytes)
        try f.makeLeaf(key: "id.key", cert: "id.pem", cn: "Identity Test")
        let leaf = try KeyImport.parse(try f.read("id.pem"), passphrase: noPassphrase).certificates[0].certificate
        let ca = try KeyImport.parse(try f.read("ca.pem"), passphrase: noPassphrase).certificates[0].certificate
        let identity = try Identity(key: key, certificate: leaf, chain: [ca])
        try f.write("id.p12", try identity.pkcs12(passphrase: f.pass))
        let info = try Tools.must("openssl", ["pkcs12", "-in", f.path("id.p12"), "-info", "-noout", "-passin", "file:" + f.passFile])
        let text = info.text + info.stderr
        XCTAssertTrue(text.contains("MAC: sha256, Iteration 600000"), text)
        XCTAssertTrue(text.contains("PBES2, PBKDF2, AES-256-CBC, Iteration 600000, PRF hmacWithSHA256"), text)
        XCTAssertFalse(text.contains("RC2"), text)
        // The round trips on the same container at 2,048 iterations: each run
        // of 600,000 costs a quarter of a second, and there are a dozen (issue 38).
        let p12 = try identity.pkcs12(passphrase: f.pass, iterations: 2048)
        try f.write("id-2048.p12", p12)
        // openssl gets the same key and both certificates out.
        try f.write("pass2", Array(f.passphrase.utf8))
        let pem = try Tools.must("openssl", ["pkcs12", "-in", f.path("id-2048.p12"), "-nodes", "-passin", "file:" + f.passFile]).stdout
        let back = try KeyImport.parse(pem, passphrase: noPassphrase)
        XCTAssertEqual(back.keys[0].key.applicationLabel, key.applicationLabel)
        XCTAssertEqual(Set(back.certificates.map { $0.certificate.sha256Fingerprint }), Set([leaf.sha256Fingerprint, ca.sha256Fingerprint]))
        // locket reads its own export; the friendly name is the certificate's label.
        let mine = try KeyImport.parse(p12, passphrase: { try self.f.pass })
        XCTAssertEqual(mine.keys[0].label, "Identity Test")
        XCTAssertEqual(mine.certificates.first?.keyIndex, 0)
        assertKeychainError(.authFailed) { try KeyImport.parse(p12, passphrase: { try SecureBytes(copying: Array("wrong".utf8)) }) }
        assertKeychainError(.param) { try identity.pkcs12(passphrase: SecureBytes(count: 0)) }
    }

    /// Every key type an identity can hold (RSA above), in a PKCS#12 openssl
    /// reads without -legacy: the same key and certificate back. At 2,048
    /// iterations: locket's 600,000 are checked above, and EndToEndKeysTests
    /// exports one type through the command line at them (issue 38).
    func testPKCS12OfEveryIdentityKeyTypeReadByOpenSSL() throws {
        for name in ["p256", "p384", "p521", "ed25519"] {
            let key = Self.keys[name]!
            try f.write(name + ".key", try key.pkcs8PEM().bytes)
            try f.makeLeaf(key: name + ".key", cert: name + ".crt", cn: name + ".example.com")
            let leaf = try KeyImport.parse(try f.read(name + ".crt"), passphrase: noPassphrase).certificates[0].certificate
            try f.write(name + ".p12", try Identity(key: key, certificate: leaf, chain: []).pkcs12(passphrase: f.pass, iterations: 2048))
            let pem = try Tools.must("openssl", ["pkcs12", "-in", f.path(name + ".p12"), "-nodes", "-passin", "file:" + f.passFile]).stdout
            let back = try KeyImport.parse(pem, passphrase: noPassphrase)
            XCTAssertEqual(back.keys.map { $0.key.applicationLabel }, [key.applicationLabel], name)
            XCTAssertEqual(back.certificates.map { $0.certificate.sha256Fingerprint }, [leaf.sha256Fingerprint], name)
        }
    }
}
