import Foundation
@testable import LocketCore
import XCTest

// Import parsing of every format SPEC 12 names, from files openssl and
// ssh-keygen make: PKCS#12 (AES-256, 3DES, and RC2 refused with a
// conversion), PEM with several blocks, DER, OpenSSH keys plain and
// encrypted; passphrases asked once and only when needed.
final class KeysImportTests: KeysTestCase {
    override class func prepare(_ fixture: KeysFixture) throws {
        try fixture.genpkey("rsa2048", "rsa.key")
        try fixture.genpkey("p256", "p256.key")
        try fixture.makeLeaf(key: "rsa.key", cert: "rsa.pem", cn: "rsa.example.com")
        try fixture.makeLeaf(key: "p256.key", cert: "p256.pem", cn: "p256.example.com")
    }

    /// A passphrase callback that answers `answer` and counts its calls.
    final class Asker: @unchecked Sendable {
        var calls = 0
        let answer: String
        init(_ answer: String) { self.answer = answer }
        func callback() -> () throws -> SecureBytes {
            { self.calls += 1; return try SecureBytes(copying: Array(self.answer.utf8)) }
        }
    }

    func label(_ key: AsymmetricKey) -> [UInt8] { key.applicationLabel }

    func rsaLabel() throws -> [UInt8] { try KeyImport.parse(try f.read("rsa.key"), passphrase: noPassphrase).keys[0].key.applicationLabel }

    func pkcs12(_ name: String, _ extra: [String]) throws -> ToolResult {
        try Tools.run("openssl", ["pkcs12", "-export", "-inkey", f.path("rsa.key"), "-in", f.path("rsa.pem"), "-certfile", f.path("ca.pem"),
                                  "-name", "My Identity", "-passout", "file:" + f.passFile, "-out", f.path(name)] + extra)
    }

    func checkIdentity(_ items: ImportedItems, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(items.keys.count, 1, file: file, line: line)
        XCTAssertEqual(items.certificates.count, 2, file: file, line: line)
        XCTAssertEqual(items.keys.first?.key.applicationLabel, try rsaLabel(), file: file, line: line)
        XCTAssertEqual(items.certificates.first?.keyIndex, 0, file: file, line: line)
        XCTAssertEqual(items.certificates.first?.certificate.commonName, "rsa.example.com", file: file, line: line)
        XCTAssertNil(items.certificates.last?.keyIndex, file: file, line: line)
        XCTAssertEqual(items.certificates.last?.certificate.commonName, "Locket Test CA", file: file, line: line)
    }

    func testPKCS12WithAES256AndWith3DES() throws {
        try Tools.must("openssl", ["version"])
        XCTAssertEqual(try pkcs12("aes.p12", []).status, 0)
        XCTAssertEqual(try pkcs12("3des.p12", ["-keypbe", "PBE-SHA1-3DES", "-certpbe", "PBE-SHA1-3DES", "-macalg", "sha1"]).status, 0)
        for name in ["aes.p12", "3des.p12"] {
            let asker = Asker(f.passphrase)
            let items = try KeyImport.parse(SecureBytes(copying: try f.read(name)), passphrase: asker.callback())
            XCTAssertEqual(items.format, .pkcs12)
            XCTAssertEqual(asker.calls, 1, name)
            try checkIdentity(items)
            XCTAssertEqual(items.keys[0].label, "My Identity")
            // Wrong passphrase: errSecAuthFailed.
            assertKeychainError(.authFailed) { try KeyImport.parse(try self.f.read(name), passphrase: Asker("wrong").callback()) }
        }
    }

    func testPKCS12WithoutPassphraseIsNotAskedFor() throws {
        // An empty passphrase is no secret: it can go in argv.
        let r = try Tools.run("openssl", ["pkcs12", "-export", "-inkey", f.path("p256.key"), "-in", f.path("p256.pem"), "-passout", "pass:", "-out", f.path("nopass.p12")])
        XCTAssertEqual(r.status, 0, r.stderr)
        let items = try KeyImport.parse(try f.read("nopass.p12"), passphrase: noPassphrase)
        XCTAssertEqual(items.keys.count, 1)
        XCTAssertEqual(items.certificates.first?.keyIndex, 0)
    }

    /// An RC2 file, as `openssl pkcs12 -export -legacy` and old Windows and
    /// macOS exports write: refused with the conversion, no libcrypto code.
    func testRC2PKCS12IsRefusedWithTheConversion() throws {
        let made = try pkcs12("rc2.p12", ["-legacy"])
        guard made.status == 0 else { throw XCTSkip("this openssl can't write RC2 PKCS#12 (-legacy needs its legacy provider): \(made.stderr)") }
        let error = assertKeychainError(.param) { try KeyImport.parse(try self.f.read("rc2.p12"), passphrase: Asker(self.f.passphrase).callback()) }
        XCTAssertTrue(error?.message.contains("RC2") ?? false, "\(String(describing: error))")
        // The engine gives the reason; the command line words the conversion (Hints.swift).
        XCTAssertEqual(error?.reason, .legacyEncryption(pkcs12: true), "\(String(describing: error))")
        XCTAssertNil(error?.hint, "the engine words no advice")
        // The conversion the hint gives works, and its output imports (openssl
        // reads -passin and -passout from two files: one file would be read once).
        try f.write("pass2", Array(f.passphrase.utf8))
        try Tools.must("openssl", ["pkcs12", "-legacy", "-in", f.path("rc2.p12"), "-out", f.path("tmp.pem"), "-passin", "file:" + f.passFile, "-passout", "file:" + f.path("pass2")])
        try Tools.must("openssl", ["pkcs12", "-export", "-in", f.path("tmp.pem"), "-out", f.path("converted.p12"), "-passin", "file:" + f.passFile, "-passout", "file:" + f.path("pass2")])
        try checkIdentity(try KeyImport.parse(try f.read("converted.p12"), passphrase: Asker(f.passphrase).callback()))
        // A wrong passphrase on the RC2 file is still a wrong passphrase.
        assertKeychainError(.authFailed) { try KeyImport.parse(try self.f.read("rc2.p12"), passphrase: Asker("nope").callback()) }
    }

    func testPEMWithKeyCertificateAndChain() throws {
        var bundle = try f.read("rsa.pem") + f.read("ca.pem") + f.read("rsa.key")
        bundle = Array("some text before\n".utf8) + bundle
        let items = try KeyImport.parse(SecureBytes(copying: bundle), passphrase: noPassphrase)
        XCTAssertEqual(items.format, .pem)
        XCTAssertEqual(items.keys.count, 1)
        XCTAssertEqual(items.certificates.map { $0.keyIndex }, [0, nil])
    }

    func testPEMPrivateKeyForms() throws {
        let expected = try rsaLabel()
        // Traditional RSA, plain and encrypted (Proc-Type/DEK-Info).
        try Tools.must("openssl", ["rsa", "-in", f.path("rsa.key"), "-traditional", "-out", f.path("trad.pem")])
        try Tools.must("openssl", ["rsa", "-in", f.path("rsa.key"), "-traditional", "-aes256", "-passout", "file:" + f.passFile, "-out", f.path("trad-enc.pem")])
        // Encrypted PKCS#8 (PBES2), PEM and DER.
        try Tools.must("openssl", ["pkcs8", "-topk8", "-in", f.path("rsa.key"), "-v2", "aes-256-cbc", "-passout", "file:" + f.passFile, "-out", f.path("enc.pem")])
        try Tools.must("openssl", ["pkcs8", "-topk8", "-in", f.path("rsa.key"), "-v2", "aes-256-cbc", "-passout", "file:" + f.passFile, "-outform", "DER", "-out", f.path("enc.der")])
        XCTAssertEqual(try KeyImport.parse(try f.read("trad.pem"), passphrase: noPassphrase).keys[0].key.applicationLabel, expected)
        for name in ["trad-enc.pem", "enc.pem", "enc.der"] {
            let asker = Asker(f.passphrase)
            let items = try KeyImport.parse(try f.read(name), passphrase: asker.callback())
            XCTAssertEqual(items.keys[0].key.applicationLabel, expected, name)
            XCTAssertEqual(items.keys[0].key.keyClass, .private)
            XCTAssertEqual(asker.calls, 1)
            assertKeychainError(.authFailed) { try KeyImport.parse(try self.f.read(name), passphrase: Asker("wrong").callback()) }
        }
        // Traditional EC (SEC1), with the EC PARAMETERS block `openssl ecparam -genkey` writes first.
        try Tools.must("openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-out", f.path("sec1.pem")])
        let sec1 = try KeyImport.parse(try f.read("sec1.pem"), passphrase: noPassphrase)
        XCTAssertEqual(sec1.keys.count, 1)
        XCTAssertEqual(sec1.keys[0].key.keyType, .ec)
        // Two encrypted keys in one file: the passphrase is asked once.
        let asker = Asker(f.passphrase)
        let two = try KeyImport.parse(try f.read("enc.pem") + f.read("trad-enc.pem"), passphrase: asker.callback())
        XCTAssertEqual(two.keys.count, 2)
        XCTAssertEqual(asker.calls, 1)
    }

    func testPublicKeyForms() throws {
        let expected = try rsaLabel()
        try Tools.must("openssl", ["pkey", "-in", f.path("rsa.key"), "-pubout", "-out", f.path("pub.pem")])
        try Tools.must("openssl", ["pkey", "-in", f.path("rsa.key"), "-pubout", "-outform", "DER", "-out", f.path("pub.der")])
        try Tools.must("openssl", ["rsa", "-in", f.path("rsa.key"), "-RSAPublicKey_out", "-out", f.path("rsapub.pem")])
        for name in ["pub.pem", "pub.der", "rsapub.pem"] {
            let items = try KeyImport.parse(try f.read(name), passphrase: noPassphrase)
            XCTAssertEqual(items.keys.count, 1, name)
            XCTAssertEqual(items.keys[0].key.keyClass, .public, name)
            XCTAssertEqual(items.keys[0].key.applicationLabel, expected, name)
        }
    }

    func testDERForms() throws {
        try Tools.must("openssl", ["x509", "-in", f.path("rsa.pem"), "-outform", "DER", "-out", f.path("cert.der")])
        try Tools.must("openssl", ["pkey", "-in", f.path("p256.key"), "-outform", "DER", "-out", f.path("key.der")])
        try Tools.must("openssl", ["rsa", "-in", f.path("rsa.key"), "-traditional", "-outform", "DER", "-out", f.path("trad.der")])
        let cert = try KeyImport.parse(try f.read("cert.der"), passphrase: noPassphrase)
        XCTAssertEqual(cert.format, .der)
        XCTAssertEqual(cert.certificates.count, 1)
        let key = try KeyImport.parse(try f.read("key.der"), passphrase: noPassphrase)
        XCTAssertEqual(key.keys[0].key.keyType, .ec)
        XCTAssertEqual(try KeyImport.parse(try f.read("trad.der"), passphrase: noPassphrase).keys[0].key.applicationLabel, try rsaLabel())
    }

    func testOpenSSHKeysFromSSHKeygen() throws {
        guard Tools.find("ssh-keygen") != nil else { throw XCTSkip("ssh-keygen is not installed (make test-deps installs openssh-client)") }
        for (type, bits) in [("ed25519", ""), ("ecdsa", "256"), ("ecdsa", "384"), ("ecdsa", "521"), ("rsa", "2048")] {
            let name = "id_\(type)\(bits)"
            // The run's ssh-keygen key of this type (`TestKeys`), this test's own copy.
            try TestKeys.sshKeygen(["-t", type] + (bits.isEmpty ? [] : ["-b", bits]), comment: "me@host", to: f.path(name))
            let plain = try KeyImport.parse(try f.read(name), passphrase: noPassphrase)
            XCTAssertEqual(plain.keys.count, 1, name)
            let key = plain.keys[0].key
            XCTAssertEqual(plain.keys[0].label, "me@host")
            let pub = String(decoding: try f.read(name + ".pub"), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            XCTAssertEqual(try key.openSSHPublicKey(comment: "me@host"), pub, name)
            // The same key encrypted by ssh-keygen (bcrypt_pbkdf, aes256-ctr): the passphrase reaches ssh-keygen through askpass.
            // At ssh-keygen's default 16 rounds for one key, at 2 for the others
            // (16 cost seconds in the test build; KeysInteropTests checks bcrypt_pbkdf at any count).
            let rounds = type == "ed25519" ? [] : ["-a", "2"]
            try Tools.must("ssh-keygen", ["-q", "-p", "-f", f.path(name), "-P", ""] + rounds, environment: f.askpass)
            let asker = Asker(f.passphrase)
            let encrypted = try KeyImport.parse(try f.read(name), passphrase: asker.callback())
            XCTAssertEqual(asker.calls, 1)
            XCTAssertEqual(encrypted.keys[0].key.applicationLabel, key.applicationLabel, name)
            XCTAssertEqual(encrypted.keys[0].key.pkcs8?.bytes, key.pkcs8?.bytes, "\(name): the same canonical PKCS#8")
            // A wrong passphrase, on the key at 2 rounds (ed25519's re-encrypted so: a 16-round attempt costs seconds here).
            if rounds.isEmpty { try Tools.must("ssh-keygen", ["-q", "-p", "-f", f.path(name), "-a", "2"], environment: f.askpass) }
            assertKeychainError(.authFailed) { try KeyImport.parse(try self.f.read(name), passphrase: Asker("wrong").callback()) }
            // The public line imports as a public key.
            let items = try KeyImport.parse(Array(pub.utf8), passphrase: noPassphrase)
            XCTAssertEqual(items.format, .openssh)
            XCTAssertEqual(items.keys[0].key.keyClass, .public)
            XCTAssertEqual(items.keys[0].key.applicationLabel, key.applicationLabel)
        }
    }

    func testOpenSSHKeyWithAES256GCM() throws {
        guard Tools.find("ssh-keygen") != nil else { throw XCTSkip("ssh-keygen is not installed") }
        // At 2 rounds of bcrypt_pbkdf: the cipher is the point here (ssh-keygen's 16 are testOpenSSHKeysFromSSHKeygen's).
        try Tools.must("ssh-keygen", ["-q", "-t", "ed25519", "-Z", "aes256-gcm@openssh.com", "-a", "2", "-f", f.path("gcm")], environment: f.askpass)
        let items = try KeyImport.parse(try f.read("gcm"), passphrase: Asker(f.passphrase).callback())
        XCTAssertEqual(items.keys[0].key.keyType, .ed25519)
        assertKeychainError(.authFailed) { try KeyImport.parse(try self.f.read("gcm"), passphrase: Asker("wrong").callback()) }
    }

    func testFormatForcingAndDetection() throws {
        let pem = try f.read("rsa.pem")
        XCTAssertEqual(KeyImport.detectFormat(pem), .pem)
        assertKeychainError(.decode) { try KeyImport.parse(pem, format: .der, passphrase: noPassphrase) }
        assertKeychainError(.decode) { try KeyImport.parse(pem, format: .pkcs12, passphrase: noPassphrase) }
        assertKeychainError(.decode) { try KeyImport.parse(pem, format: .openssh, passphrase: noPassphrase) }
        XCTAssertEqual(try KeyImport.parse(pem, format: .pem, passphrase: noPassphrase).certificates.count, 1)
        XCTAssertEqual(try KeyFileFormat.named("PKCS12"), .pkcs12)
        let error = assertKeychainError(.param) { try KeyFileFormat.named("jks") }
        XCTAssertTrue(error?.message.contains("pkcs12, pem, der, openssh") ?? false)
    }

    func testCertificateThatDoesNotMatchTheKeyIsRefused() throws {
        // p256's key with rsa's certificate.
        let wrong = try f.read("rsa.pem") + f.read("p256.key")
        let error = assertKeychainError(.param) { try KeyImport.parse(wrong, passphrase: noPassphrase) }
        XCTAssertTrue(error?.message.contains("matches none") ?? false)
        // A certificate alone, or a key alone, is fine.
        XCTAssertEqual(try KeyImport.parse(try f.read("rsa.pem"), passphrase: noPassphrase).certificates[0].keyIndex, nil)
    }
}
