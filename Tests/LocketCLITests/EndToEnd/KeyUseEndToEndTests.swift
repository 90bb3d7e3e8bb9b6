import Foundation
import LocketSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `key sign|verify|encrypt|decrypt` (SPEC §13, issue 14) on keys imported
/// non-extractable from openssl's files: every signature and ciphertext
/// locket makes is checked by openssl (ECIES by an independent Python
/// implementation), and openssl's (Python's) by locket.
final class KeyUseEndToEndTests: EndToEndCase {
    /// Engine and command-line logic: in-process through `CLI.run` (issue 38);
    /// what needs the binary here (another process, a terminal, its own name) runs it.
    override class var inProcess: Bool { true }

    private var openssl: String!
    private let message = Array("a message to sign, with a NUL \u{0} and more\n".utf8)

    override func setUpWithError() throws {
        try super.setUpWithError()
        openssl = try SystemTool.require("openssl", for: "checking key use against an independent implementation")
        initKeychain()
        try write("msg", message)
    }

    private func path(_ name: String) -> String { sandbox.root + "/" + name }
    private func write(_ name: String, _ bytes: [UInt8]) throws { try Data(bytes).write(to: URL(fileURLWithPath: path(name))) }
    private func read(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path(name)))) }

    @discardableResult
    private func tool(_ program: String, _ arguments: [String], input: Input = .devNull, status: Int32 = 0,
                      file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = Spawn.run(program, arguments, environment: sandbox.environment, input: input, timeout: 60)
        XCTAssertEqual(result.status, status, result.summary, file: file, line: line)
        return result
    }

    /// An openssl key file NAME.pem of `kind` (`OpenSSLFixtures.genpkeyOptions`; the run's copy, `TestKeys`)
    /// and NAME.pub, imported non-extractable with label NAME.
    private func opensslKey(_ name: String, _ kind: String) {
        XCTAssertNoThrow(try TestKeys.genpkey(kind, to: path(name + ".pem")))
        tool(openssl, ["pkey", "-in", path(name + ".pem"), "-pubout", "-out", path(name + ".pub")])
        ok("import", path(name + ".pem"), "--non-extractable", "--label", name)
    }

    private func use(_ action: String, _ label: String, _ algorithm: String, _ extra: [String] = [], input: Input = .devNull) -> RunResult {
        locket(["key", action, "--label", label, "--algorithm", algorithm] + extra, input: input)
    }

    func testSignaturesVerifyWithOpenSSLAndTheOtherWayRound() throws {
        opensslKey("ed", "ed25519")
        opensslKey("p256", "p256")
        opensslKey("p384", "p384")
        opensslKey("p521", "p521")
        opensslKey("rsa", "rsa2048")
        let pss = ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:digest", "-sigopt", "rsa_mgf1_md:sha256"]
        // (label, algorithm, openssl's sign arguments, openssl's verify arguments)
        let cases: [(String, String, [String], [String])] = [
            ("ed", "ed25519", ["pkeyutl", "-sign", "-rawin", "-inkey", path("ed.pem"), "-in", path("msg")],
             ["pkeyutl", "-verify", "-rawin", "-pubin", "-inkey", path("ed.pub"), "-in", path("msg"), "-sigfile", path("sig")]),
            ("p256", "ecdsa-message-x962-sha256", ["dgst", "-sha256", "-sign", path("p256.pem"), path("msg")],
             ["dgst", "-sha256", "-verify", path("p256.pub"), "-signature", path("sig"), path("msg")]),
            ("p384", "ecdsa-message-x962-sha384", ["dgst", "-sha384", "-sign", path("p384.pem"), path("msg")],
             ["dgst", "-sha384", "-verify", path("p384.pub"), "-signature", path("sig"), path("msg")]),
            ("p521", "ecdsa-message-x962-sha512", ["dgst", "-sha512", "-sign", path("p521.pem"), path("msg")],
             ["dgst", "-sha512", "-verify", path("p521.pub"), "-signature", path("sig"), path("msg")]),
            ("rsa", "rsa-signature-message-pkcs1v15-sha256", ["dgst", "-sha256", "-sign", path("rsa.pem"), path("msg")],
             ["dgst", "-sha256", "-verify", path("rsa.pub"), "-signature", path("sig"), path("msg")]),
            ("rsa", "rsa-signature-message-pss-sha256", ["dgst", "-sha256"] + pss + ["-sign", path("rsa.pem"), path("msg")],
             ["dgst", "-sha256"] + pss + ["-verify", path("rsa.pub"), "-signature", path("sig"), path("msg")]),
        ]
        for (label, algorithm, sign, verify) in cases {
            // locket signs (stdin to stdout), openssl verifies.
            let signed = use("sign", label, algorithm, input: .bytes(message))
            XCTAssertEqual(signed.status, 0, "\(algorithm): \(signed.summary)")
            try write("sig", signed.stdout)
            tool(openssl, verify)
            // openssl signs, locket verifies (files); a changed message or signature fails with errSecVerifyFailed.
            try write("sig", tool(openssl, sign).stdout)
            XCTAssertEqual(use("verify", label, algorithm, ["-i", path("msg"), "--signature", path("sig")]).status, 0, algorithm)
            let changed = use("verify", label, algorithm, ["--signature", path("sig")], input: .bytes(message + [0x2e]))
            XCTAssertEqual(changed.status, 32, "\(algorithm): \(changed.summary)")
            assertError(changed, "errSecVerifyFailed", -67808)
        }
    }

    func testRSAOAEPBothWaysWithOpenSSL() throws {
        opensslKey("rsa", "rsa2048")
        let oaep = ["-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha256", "-pkeyopt", "rsa_mgf1_md:sha256"]
        let secret = Array("a secret for OAEP".utf8)
        let sealed = use("encrypt", "rsa", "rsa-encryption-oaep-sha256", ["-o", path("ct")], input: .bytes(secret))
        XCTAssertEqual(sealed.status, 0, sealed.summary)
        XCTAssertEqual(tool(openssl, ["pkeyutl", "-decrypt", "-inkey", path("rsa.pem"), "-in", path("ct")] + oaep).stdout, secret)
        let theirs = tool(openssl, ["pkeyutl", "-encrypt", "-pubin", "-inkey", path("rsa.pub")] + oaep, input: .bytes(secret)).stdout
        let opened = use("decrypt", "rsa", "rsa-encryption-oaep-sha256", input: .bytes(theirs))
        XCTAssertEqual(opened.status, 0, opened.summary)
        XCTAssertEqual(opened.stdout, secret)
    }

    /// Apple's ECIES, against the Python implementation the engine's tests use, both ways, every curve
    /// (one python3 for the six jobs: ecies.py batch; issue 38).
    func testECIESBothWaysWithAnIndependentImplementation() throws {
        let python = try SystemTool.require("python3", for: "the independent ECIES")
        guard Spawn.run(python, ["-c", "import cryptography"], environment: sandbox.environment, input: .devNull, timeout: 30).status == 0 else {
            throw XCTSkip("python3 has no cryptography package (make test-deps installs python3-cryptography)")
        }
        try write("ecies.py", Array(InteropScripts.ecies.utf8))
        let algorithm = "ecies-cofactor-variable-iv-x963-sha256-aesgcm"
        let curves = ["P-256", "P-384", "P-521"]
        var jobs = ""
        for curve in curves {
            opensslKey(curve, "p" + curve.dropFirst(2))
            let plaintext = Array("hello, \(curve)".utf8)
            let ours = use("encrypt", curve, algorithm, input: .bytes(plaintext))
            XCTAssertEqual(ours.status, 0, ours.summary)
            let point = tool(openssl, ["pkey", "-in", path(curve + ".pem"), "-pubout", "-outform", "DER"]).stdout
            // The uncompressed point ends the SubjectPublicKeyInfo.
            let length = ["P-256": 65, "P-384": 97, "P-521": 133][curve]!
            jobs += "decrypt \(path(curve + ".pem")) \(Hex.encode(ours.stdout))\n"
            jobs += "encrypt \(Hex.encode(point.suffix(length))) \(Hex.encode(plaintext))\n"
        }
        let answers = tool(python, [path("ecies.py"), "batch"], input: .bytes(Array(jobs.utf8))).out.split(separator: "\n").map(String.init)
        XCTAssertEqual(answers.count, 2 * curves.count, "ecies.py's answers: \(answers)")
        for (index, curve) in curves.enumerated() where answers.count == 2 * curves.count {
            let plaintext = Array("hello, \(curve)".utf8)
            XCTAssertEqual(answers[2 * index], Hex.encode(plaintext), curve)
            guard let theirs = Hex.decode(answers[2 * index + 1]), !theirs.isEmpty else {
                XCTFail("\(curve): ecies.py's ciphertext is not hex: \(answers[2 * index + 1])")
                continue
            }
            let opened = use("decrypt", curve, algorithm, input: .bytes(theirs))
            XCTAssertEqual(opened.stdout, plaintext, "\(curve): \(opened.summary)")
            var tampered = theirs
            tampered[tampered.count - 1] ^= 1
            assertError(use("decrypt", curve, algorithm, input: .bytes(tampered)), "errSecDecode", -26275)
        }
    }

    /// A key made inside the keychain, non-extractable: it signs and seals,
    /// openssl checks, and its value is still refused.
    func testAGeneratedNonExtractableKeyIsUsedNeverShown() throws {
        try write("ed.pub", ok("key", "generate", "--type", "ed25519", "--label", "gen", "--non-extractable").stdout)
        let signed = use("sign", "gen", "ed25519", ["-o", path("sig")], input: .bytes(message))
        XCTAssertEqual(signed.status, 0, signed.summary)
        var st = stat()
        XCTAssertEqual(stat(path("sig"), &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        tool(openssl, ["pkeyutl", "-verify", "-rawin", "-pubin", "-inkey", path("ed.pub"), "-in", path("msg"), "-sigfile", path("sig")])
        assertError(locket("find", "--class", "keys", "--label", "gen", "-w"), "errSecDataNotAvailable", -25316)

        ok("key", "generate", "--type", "x25519", "--label", "box", "--non-extractable")
        let box = use("encrypt", "box", "x25519-sealed-box", input: .text("sealed"))
        XCTAssertEqual(box.stdout.count, "sealed".utf8.count + 48, box.summary)
        XCTAssertEqual(use("decrypt", "box", "x25519-sealed-box", input: .bytes(box.stdout)).out, "sealed")
    }

    /// With --json: one object, binary results in base64; verify says so; errors are the JSON error object.
    func testJSONOutput() throws {
        opensslKey("ed", "ed25519")
        let signed = locket(["--json", "key", "sign", "--label", "ed", "--algorithm", "ed25519"], input: .bytes(message))
        XCTAssertEqual(signed.status, 0, signed.summary)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(signed.stdout)) as? [String: Any])
        XCTAssertEqual(object["algorithm"] as? String, "ed25519")
        let signature = try XCTUnwrap(Data(base64Encoded: try XCTUnwrap(object["resultBase64"] as? String)))
        try write("sig", Array(signature))
        tool(openssl, ["pkeyutl", "-verify", "-rawin", "-pubin", "-inkey", path("ed.pub"), "-in", path("msg"), "-sigfile", path("sig")])
        let verified = locket(["--json", "key", "verify", "--label", "ed", "--algorithm", "ed25519", "--signature", path("sig")], input: .bytes(message))
        XCTAssertEqual(verified.out, #"{"algorithm":"ed25519","verified":true}"# + "\n")
        let written = locket(["--json", "key", "sign", "--label", "ed", "--algorithm", "ed25519", "-o", path("sig2")], input: .bytes(message))
        XCTAssertEqual(try JSONSerialization.jsonObject(with: Data(written.stdout)) as? [String: String], ["algorithm": "ed25519", "out": path("sig2")])
        XCTAssertEqual(try read("sig2"), Array(signature), "Ed25519 signatures are deterministic")
        let failed = locket(["--json", "key", "verify", "--label", "ed", "--algorithm", "ed25519", "--signature", path("sig")], input: .text("other"))
        XCTAssertEqual(failed.status, 32)
        XCTAssertEqual(failed.stdout, [])
        XCTAssertTrue(failed.err.contains(#""error":"errSecVerifyFailed""#), failed.err)
    }

    func testClearErrors() throws {
        opensslKey("p256", "p256")
        // The wrong algorithm for the key's type: errSecParam, naming what the key supports.
        let wrong = use("sign", "p256", "ed25519", input: .bytes(message))
        XCTAssertEqual(wrong.status, 206)
        assertError(wrong, "errSecParam", -50)
        XCTAssertTrue(wrong.err.contains("ecdsa-message-x962-sha256"), wrong.err)
        assertError(use("encrypt", "p256", "nonsense", input: .bytes(message)), "errSecParam", -50)
        // A public key alone can't sign or decrypt; it can verify.
        ok("import", path("p256.pub"), "--label", "pub-only")
        let publicSign = use("sign", "pub-only", "ecdsa-message-x962-sha256", input: .bytes(message))
        assertError(publicSign, "errSecParam", -50)
        XCTAssertTrue(publicSign.err.contains("is a public key"), publicSign.err)
        try write("sig", use("sign", "p256", "ecdsa-message-x962-sha256", input: .bytes(message)).stdout)
        XCTAssertEqual(use("verify", "pub-only", "ecdsa-message-x962-sha256", ["--signature", path("sig")], input: .bytes(message)).status, 0)
        // No such key; a locked keychain.
        assertError(use("sign", "absent", "ed25519", input: .bytes(message)), "errSecItemNotFound", -25300)
        ok("lock")
        let locked = use("sign", "p256", "ecdsa-message-x962-sha256", input: .bytes(message))
        XCTAssertEqual(locked.status, 36, locked.summary)
        ok("unlock", "--password-stdin", input: .text(Self.password + "\n"))
        // An output file is never replaced without -f; a FIFO as input fails at once.
        try write("taken", Array("keep".utf8))
        assertError(use("sign", "p256", "ecdsa-message-x962-sha256", ["-o", path("taken")], input: .bytes(message)), "errSecParam", -50)
        XCTAssertEqual(try read("taken"), Array("keep".utf8))
        XCTAssertEqual(use("sign", "p256", "ecdsa-message-x962-sha256", ["-o", path("taken"), "-f"], input: .bytes(message)).status, 0)
        XCTAssertNotEqual(try read("taken"), Array("keep".utf8))
        mkfifo(path("fifo"), 0o600)
        assertError(use("sign", "p256", "ecdsa-message-x962-sha256", ["-i", path("fifo")]), "errSecParam", -50)
        // Usage errors: exit 2.
        for arguments in [["key", "sign", "--label", "p256"], ["key", "sign", "--label", "p256", "--algorithm", "ed25519", "--signature", path("sig")],
                          ["key", "verify", "--label", "p256", "--algorithm", "ed25519"], ["key", "public", "--algorithm", "ed25519"],
                          ["key", "sign", "--algorithm", "ed25519", "--openssh"], ["key", "sign", "--algorithm", "ed25519", "-f"]] {
            XCTAssertEqual(locket(arguments).status, 2, arguments.joined(separator: " "))
        }
    }
}
