import Foundation
@testable import LocketCore
import LocketTestSupport
import XCTest

// Interoperability with independent implementations: Apple's ECIES written
// again here in Python with the `cryptography` package (from the
// description in SecKeyAdaptors), libsodium sealed boxes through PyNaCl,
// SSH agent signatures checked by `ssh-keygen -Y check-novalidate` and
// ssh-keygen's `-Y sign` signatures checked by locket, bcrypt_pbkdf against
// Python's `bcrypt.kdf`.
final class KeysInteropTests: KeysTestCase {
    override class func prepare(_ fixture: KeysFixture) throws {
        try fixture.write("ecies.py", Array(eciesScript.utf8))
        try fixture.write("sealedbox.py", Array(sealedBoxScript.utf8))
    }

    /// Apple's ECIES written again in Python (shared with the `key encrypt|decrypt` end-to-end tests).
    static let eciesScript = InteropScripts.ecies

    static let sealedBoxScript = """
    import sys
    from nacl.public import PrivateKey, PublicKey, SealedBox
    data = sys.stdin.buffer.read()
    if sys.argv[1] == "encrypt":
        sys.stdout.buffer.write(SealedBox(PublicKey(bytes.fromhex(sys.argv[2]))).encrypt(data))
    else:
        sys.stdout.buffer.write(SealedBox(PrivateKey(open(sys.argv[2], "rb").read())).decrypt(data))
    """

    /// Apple's ECIES without the variable IV (the AES key from the KDF, an
    /// all-zero IV), and the standard/cofactor names of both (issue 37).
    func testTheOtherECIESVariantsAgainstTheIndependentImplementation() throws {
        guard let python = Tools.python(with: "cryptography") else {
            throw XCTSkip("no python3 with the cryptography package (make test-deps installs python3-cryptography)")
        }
        let key = try AsymmetricKey.generate(.p256)
        try f.write("ec.pem", try key.pkcs8PEM().bytes)
        let plaintext = Array("hello, standard ECIES".utf8)
        let variants: [(KeyAlgorithm, Bool)] = [(.eciesStandardX963SHA256AESGCM, true), (.eciesCofactorX963SHA256AESGCM, true),
                                                (.eciesStandardVariableIVX963SHA256AESGCM, false)]
        var jobs: [ECIESJob] = []
        for (algorithm, zeroIV) in variants {
            let ciphertext = try key.publicKey.encrypt(plaintext, algorithm: algorithm)
            jobs.append(ECIESJob(command: "decrypt", argument: f.path("ec.pem"), data: ciphertext, zeroIV: zeroIV))
            jobs.append(ECIESJob(command: "encrypt", argument: key.publicKeyExternalRepresentation.hex, data: plaintext, zeroIV: zeroIV))
        }
        let answers = try ecies(python, jobs)
        for (index, (algorithm, zeroIV)) in variants.enumerated() {
            XCTAssertEqual(answers[2 * index], plaintext, algorithm.rawValue)
            let theirs = answers[2 * index + 1]
            XCTAssertEqual(try key.decrypt(theirs, algorithm: algorithm).bytes, plaintext, algorithm.rawValue)
            // The other IV rule does not open it.
            let other: KeyAlgorithm = zeroIV ? .eciesCofactorVariableIVX963SHA256AESGCM : .eciesStandardX963SHA256AESGCM
            assertKeychainError(.decode) { try key.decrypt(theirs, algorithm: other) }
        }
    }

    /// One job for ecies.py: `decrypt` with a PEM file's path or `encrypt` to a hex point.
    struct ECIESJob {
        let command: String, argument: String, data: [UInt8], zeroIV: Bool
    }

    /// What ecies.py answers to each job, from one interpreter for them all
    /// (its start with `cryptography` imported is ~0.1 CPU-s; issue 38).
    func ecies(_ python: String, _ jobs: [ECIESJob], file: StaticString = #filePath, line: UInt = #line) throws -> [[UInt8]] {
        let input = jobs.map { "\($0.command) \($0.argument) \($0.data.hex)\($0.zeroIV ? " zero-iv" : "")\n" }.joined()
        let output = try Tools.must(python, [f.path("ecies.py"), "batch"], stdin: Array(input.utf8), file: file, line: line).text
        let answers = output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { [UInt8](hex: String($0)) }
        guard answers.count == jobs.count else {
            XCTFail("ecies.py answered \(answers.count) of \(jobs.count) jobs: \(output)", file: file, line: line)
            throw KeysTestError.toolFailed("ecies.py")
        }
        return answers
    }

    /// Raw RSA (kSecKeyAlgorithmRSAEncryptionRaw) against openssl's, on a
    /// 1023-bit key: Apple opens keys of any size up to 8192 bits (issue 37).
    func testRawRSAAgainstOpenSSLOnAKeyOf1023Bits() throws {
        try Tools.must("openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1023", "-out", f.path("rsa1023.pem")])
        let key = try KeyImport.parse(try f.read("rsa1023.pem"), passphrase: noPassphrase).keys[0].key
        XCTAssertEqual(key.sizeInBits, 1023)
        let message = Array("a raw block".utf8)
        let ciphertext = try key.publicKey.encrypt(message, algorithm: .rsaEncryptionRaw)
        XCTAssertEqual(ciphertext.count, 128, "a block of the modulus's length")
        try f.write("raw.bin", ciphertext)
        let opened = try Tools.must("openssl", ["pkeyutl", "-decrypt", "-inkey", f.path("rsa1023.pem"), "-pkeyopt", "rsa_padding_mode:none",
                                                "-in", f.path("raw.bin")]).stdout
        XCTAssertEqual(opened, [UInt8](repeating: 0, count: 128 - message.count) + message)
        XCTAssertEqual(try key.decrypt(ciphertext, algorithm: .rsaEncryptionRaw).bytes, opened)
        assertKeychainError(.param) { _ = try key.publicKey.encrypt([UInt8](repeating: 0xff, count: 128), algorithm: .rsaEncryptionRaw) }
        assertKeychainError(.param) { _ = try key.publicKey.encrypt([UInt8](repeating: 1, count: 129), algorithm: .rsaEncryptionRaw) }
    }

    func testECIESAgainstAnIndependentImplementation() throws {
        guard let python = Tools.python(with: "cryptography") else {
            throw XCTSkip("no python3 with the cryptography package (make test-deps installs python3-cryptography)")
        }
        let plaintexts = [[UInt8](), Array("hello, ECIES".utf8), [UInt8](repeating: 0xA5, count: 5000)]
        var keys: [(type: KeyGenerationType, key: AsymmetricKey)] = []
        var jobs: [ECIESJob] = []
        for type in [KeyGenerationType.p256, .p384, .p521] {
            let key = try AsymmetricKey.generate(type)
            try f.write("ec-\(type.rawValue).pem", try key.pkcs8PEM().bytes)
            keys.append((type, key))
            for plaintext in plaintexts {
                // locket encrypts, Python decrypts.
                let ciphertext = try key.publicKey.encrypt(plaintext, algorithm: .eciesCofactorVariableIVX963SHA256AESGCM)
                XCTAssertEqual(ciphertext.count, 1 + 2 * key.curve!.byteCount + plaintext.count + 16)
                XCTAssertEqual(Array(ciphertext.prefix(1)), [4])
                jobs.append(ECIESJob(command: "decrypt", argument: f.path("ec-\(type.rawValue).pem"), data: ciphertext, zeroIV: false))
                // Python encrypts, locket decrypts.
                jobs.append(ECIESJob(command: "encrypt", argument: key.publicKeyExternalRepresentation.hex, data: plaintext, zeroIV: false))
            }
        }
        var answers = try ecies(python, jobs).makeIterator()
        for (type, key) in keys {
            for plaintext in plaintexts {
                let opened = answers.next()!, theirs = answers.next()!
                XCTAssertEqual(opened, plaintext, type.rawValue)
                XCTAssertEqual(try key.decrypt(theirs, algorithm: .eciesCofactorVariableIVX963SHA256AESGCM).bytes, plaintext, type.rawValue)
                var tampered = theirs
                tampered[tampered.count - 1] ^= 1
                assertKeychainError(.decode) { try key.decrypt(tampered, algorithm: .eciesCofactorVariableIVX963SHA256AESGCM) }
            }
            // Another key of the curve can't open it; a short input is refused.
            let other = try AsymmetricKey.generate(type)
            let ciphertext = try key.encrypt(Array("x".utf8), algorithm: .eciesCofactorVariableIVX963SHA256AESGCM)
            assertKeychainError(.decode) { try other.decrypt(ciphertext, algorithm: .eciesCofactorVariableIVX963SHA256AESGCM) }
            assertKeychainError(.decode) { try key.decrypt(Array(ciphertext.prefix(20)), algorithm: .eciesCofactorVariableIVX963SHA256AESGCM) }
        }
    }

    func testSealedBoxesRoundTripAndOpenWithPyNaCl() throws {
        let key = try AsymmetricKey.generate(.x25519)
        let message = Array("sealed for x25519".utf8)
        let box = try key.publicKey.encrypt(message, algorithm: .x25519SealedBox)
        XCTAssertEqual(box.count, message.count + 48)
        XCTAssertEqual(try key.decrypt(box, algorithm: .x25519SealedBox).bytes, message)
        var tampered = box
        tampered[5] ^= 1
        assertKeychainError(.decode) { try key.decrypt(tampered, algorithm: .x25519SealedBox) }
        assertKeychainError(.decode) { try key.decrypt(Array(box.prefix(47)), algorithm: .x25519SealedBox) }
        assertKeychainError(.decode) { try AsymmetricKey.generate(.x25519).decrypt(box, algorithm: .x25519SealedBox) }
        XCTAssertEqual(try key.decrypt(try key.encrypt([], algorithm: .x25519SealedBox), algorithm: .x25519SealedBox).count, 0)

        guard let python = Tools.python(with: "nacl") else {
            throw XCTSkip("no python3 with PyNaCl (make test-deps installs python3-nacl); round trips checked in-process only")
        }
        // The raw X25519 private key is the last 32 bytes of its PKCS#8 DER.
        try f.write("x.sk", Array(key.pkcs8!.bytes.suffix(32)))
        XCTAssertEqual(try Tools.must(python, [f.path("sealedbox.py"), "decrypt", f.path("x.sk")], stdin: box).stdout, message)
        let theirs = try Tools.must(python, [f.path("sealedbox.py"), "encrypt", key.publicKeyExternalRepresentation.hex], stdin: message).stdout
        XCTAssertEqual(try key.decrypt(theirs, algorithm: .x25519SealedBox).bytes, message)
    }

    // MARK: SSH

    func sshsigSignedData(namespace: String, message: [UInt8]) -> [UInt8] {
        let digest = [UInt8](try! Tools.must("openssl", ["dgst", "-sha512", "-binary"], stdin: message).stdout)
        var out = Array("SSHSIG".utf8)
        for field in [Array(namespace.utf8), [], Array("sha512".utf8), digest] {
            out += withUnsafeBytes(of: UInt32(field.count).bigEndian, Array.init) + field
        }
        return out
    }

    func armor(_ blob: [UInt8]) -> String {
        let b64 = Data(blob).base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed])
        return "-----BEGIN SSH SIGNATURE-----\n\(b64)\n-----END SSH SIGNATURE-----\n"
    }

    func sshString(_ bytes: [UInt8]) -> [UInt8] { withUnsafeBytes(of: UInt32(bytes.count).bigEndian, Array.init) + bytes }

    func testAgentSignaturesVerifyWithSSHKeygenAndTheOtherWayRound() throws {
        guard Tools.find("ssh-keygen") != nil else { throw XCTSkip("ssh-keygen is not installed (make test-deps installs openssh-client)") }
        let message = Array("commit 1234\n".utf8)
        try f.write("message", message)
        let cases: [(KeyGenerationType, UInt32, String)] = [
            (.ed25519, 0, "ssh-ed25519"), (.p256, 0, "ecdsa-sha2-nistp256"), (.p384, 0, "ecdsa-sha2-nistp384"), (.p521, 0, "ecdsa-sha2-nistp521"),
            (.rsa2048, AsymmetricKey.sshAgentRSASHA256, "rsa-sha2-256"), (.rsa2048, AsymmetricKey.sshAgentRSASHA512, "rsa-sha2-512"),
        ]
        // One key a type: an RSA key is a prime search (~0.3 CPU-s here), and
        // what differs between the two RSA cases is the flag, not the key.
        var keys: [KeyGenerationType: AsymmetricKey] = [:]
        for (type, flags, name) in cases {
            let key = try keys[type] ?? AsymmetricKey.generate(type)
            keys[type] = key
            let signed = sshsigSignedData(namespace: "file", message: message)
            let signature = try key.sshSignature(for: signed, flags: flags)
            XCTAssertTrue(signature.starts(with: sshString(Array(name.utf8))), name)
            XCTAssertTrue(try key.verifySSHSignature(signature, for: signed), name)
            XCTAssertFalse(try key.verifySSHSignature(signature, for: signed + [1]), name)
            var blob = Array("SSHSIG".utf8) + [0, 0, 0, 1]
            blob += sshString(try key.sshPublicKeyBlob()) + sshString(Array("file".utf8)) + sshString([]) + sshString(Array("sha512".utf8)) + sshString(signature)
            try f.write("message.sig", Array(armor(blob).utf8))
            let check = try Tools.run("ssh-keygen", ["-Y", "check-novalidate", "-n", "file", "-s", f.path("message.sig")], stdin: message)
            XCTAssertEqual(check.status, 0, "\(name): \(check.text) \(check.stderr)")
            XCTAssertTrue(check.text.contains("Good \"file\" signature"), "\(name): \(check.text)")

            // ssh-keygen signs with the key locket exported; locket verifies.
            guard type != .rsa2048 || flags == AsymmetricKey.sshAgentRSASHA512 else { continue }
            try f.write("id", try key.openSSHPrivateKey().bytes)
            try? FileManager.default.removeItem(atPath: f.path("message.sig"))
            try Tools.must("ssh-keygen", ["-q", "-Y", "sign", "-f", f.path("id"), "-n", "file", f.path("message")])
            let armored = String(decoding: try f.read("message.sig"), as: UTF8.self)
            let body = armored.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
            let theirs = [UInt8](Data(base64Encoded: body)!)
            let parsed = try theirs.withUnsafeBytes { raw -> ([UInt8], [UInt8]) in
                var r = SSHReader(UnsafeRawBufferPointer(rebasing: raw[10...]))
                let publicKey = Array(try r.string())
                _ = try r.string(); _ = try r.string(); _ = try r.string()
                return (publicKey, Array(try r.string()))
            }
            XCTAssertEqual(parsed.0, try key.sshPublicKeyBlob(), name)
            XCTAssertTrue(try key.publicKey.verifySSHSignature(parsed.1, for: signed), name)
        }
        let rsa = try XCTUnwrap(keys[.rsa2048])
        let refused = assertKeychainError(.param) { try rsa.sshSignature(for: message, flags: 0) }
        XCTAssertTrue(refused?.message.contains("rsa-sha2-256") ?? false)
        assertKeychainError(.param) { try AsymmetricKey.generate(.x25519).sshPublicKeyBlob() }
    }

    func testBcryptPBKDFAgainstPythonBcrypt() throws {
        guard let python = Tools.python(with: "bcrypt") else {
            throw XCTSkip("no python3 with the bcrypt package (make test-deps installs python3-bcrypt); checked against ssh-keygen's keys in KeysImportTests")
        }
        // The algorithm at 1-4 rounds, aes256-ctr's 48 bytes among the lengths: the
        // count is a loop bound, and 16 (ssh-keygen's and locket's default) costs
        // seconds in the test build; the 16-round keys are KeysImportTests' and
        // KeysExportTests' (read from and by ssh-keygen).
        let cases = [("password", "salt", 4, 32), ("locket", "0123456789abcdef", 3, 48), ("p", "s", 1, 44), ("long password here", "x", 2, 100)]
        // One interpreter for every case (issue 38): `HEXPASSWORD HEXSALT ROUNDS LENGTH` a line on stdin, the key's hex a line out.
        let script = """
        import bcrypt, sys
        for line in sys.stdin:
            password, salt, rounds, length = line.split()
            key = bcrypt.kdf(password=bytes.fromhex(password), salt=bytes.fromhex(salt), desired_key_bytes=int(length), rounds=int(rounds),
                             ignore_few_rounds=True)
            print(key.hex())
        """
        let input = cases.map { "\(Array($0.0.utf8).hex) \(Array($0.1.utf8).hex) \($0.2) \($0.3)\n" }.joined()
        let expected = try Tools.must(python, ["-c", script], stdin: Array(input.utf8)).text.split(separator: "\n").map(String.init)
        XCTAssertEqual(expected.count, cases.count, "python's bcrypt answered \(expected.count) of \(cases.count) cases")
        for ((password, salt, rounds, length), theirs) in zip(cases, expected) {
            let mine = try Array(password.utf8).withUnsafeBytes { p in
                try Array(salt.utf8).withUnsafeBytes { s in try BcryptPBKDF.derive(password: p, salt: s, rounds: rounds, length: length) }
            }
            XCTAssertEqual(mine.bytes.hex, theirs, "\(password) \(salt) \(rounds) \(length)")
        }
    }
}
