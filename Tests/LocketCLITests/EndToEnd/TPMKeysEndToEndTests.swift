import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Secure Enclave keys in a TPM through what users type (SPEC §21, issue
/// 39): the release `locket` with `LOCKET_TPM` at a swtpm on loopback and
/// `locket-tpm` beside it. openssl checks every signature and derives the
/// ECDH secret; tpm2-openssl signs with the exported TSS2 file; tpm2_getcap
/// reads the TPM's own lockout counter. A class's tests share one swtpm
/// (make test runs the class in a process of its own, `BY_CLASS`); a test
/// that kills or locks out its TPM starts one of its own.
final class TPMKeysEndToEndTests: EndToEndCase {
    nonisolated(unsafe) private static var shared: Result<SoftwareTPM, Error>?
    private var own: [SoftwareTPM] = []
    private var openssl: String!
    private let message = Array("a message signed in the TPM\n".utf8)

    override class func tearDown() {
        if case .success(let tpm)? = shared { tpm.stop() }
        shared = nil
        super.tearDown()
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        openssl = try SystemTool.require("openssl", for: "checking the TPM's signatures")
        initKeychain()
        try Data(message).write(to: URL(fileURLWithPath: path("msg")))
    }

    override func tearDown() {
        for tpm in own { tpm.stop() }
        own = []
        super.tearDown()
    }

    private func sharedTPM() throws -> SoftwareTPM {
        if Self.shared == nil { Self.shared = Result { try SoftwareTPM() } }
        do { return try Self.shared!.get() } catch let unavailable as TestUnavailable { throw XCTSkip(unavailable.reason) }
    }

    private func ownTPM() throws -> SoftwareTPM {
        do {
            let tpm = try SoftwareTPM()
            own.append(tpm)
            return tpm
        } catch let unavailable as TestUnavailable {
            throw XCTSkip(unavailable.reason)
        }
    }

    private func path(_ name: String) -> String { sandbox.root + "/" + name }
    private func read(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path(name)))) }

    /// `locket ARGS` with LOCKET_TPM at `tpm`.
    @discardableResult
    private func tpmLocket(_ tpm: SoftwareTPM, _ arguments: [String], input: Input = .devNull,
                           file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        locket(arguments, input: input, environment: ["LOCKET_TPM": tpm.tcti], file: file, line: line)
    }

    @discardableResult
    private func tool(_ program: String, _ arguments: [String], environment: [String: String] = [:], status: Int32 = 0,
                      file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = Spawn.run(program, arguments, environment: sandbox.environment.merging(environment) { $1 }, input: .devNull, timeout: 60)
        XCTAssertEqual(result.status, status, result.summary, file: file, line: line)
        return result
    }

    /// `key generate --token secure-enclave`, its public key PEM written to NAME.pub.
    private func generate(_ tpm: SoftwareTPM, _ label: String, _ extra: [String] = [], input: Input = .devNull,
                          file: StaticString = #filePath, line: UInt = #line) throws {
        let made = tpmLocket(tpm, ["key", "generate", "--type", "p256", "--token", "secure-enclave", "--label", label] + extra, input: input,
                             file: file, line: line)
        XCTAssertEqual(made.status, 0, made.summary, file: file, line: line)
        XCTAssertTrue(made.out.hasPrefix("-----BEGIN PUBLIC KEY-----"), made.summary, file: file, line: line)
        try Data(made.stdout).write(to: URL(fileURLWithPath: path(label + ".pub")))
    }

    /// The keychain file's bytes (and its journal's, if any), to show nothing was written.
    private func keychainBytes() throws -> [UInt8] {
        let file = sandbox.loginKeychain
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        for suffix in ["-wal", "-journal"] {
            if let extra = try? Data(contentsOf: URL(fileURLWithPath: file + suffix)) { bytes += Array(extra) }
        }
        return bytes
    }

    // MARK: - Made, used and checked by openssl

    /// A key made in the TPM signs (openssl verifies), decrypts Apple's ECIES,
    /// shows its token, never leaves as PKCS#8 or OpenSSH, and its public
    /// key is read without the TPM; `status` names the TPM without starting anything.
    func testGenerateSignVerifyDecryptAndNeverLeave() throws {
        let tpm = try sharedTPM()
        try generate(tpm, "se")
        for algorithm in ["ecdsa-message-x962-sha256", "ecdsa-digest-x962-sha256"] {
            let input = algorithm.contains("digest")
                ? Array(tool(openssl, ["dgst", "-sha256", "-binary", path("msg")]).stdout) : message
            let signed = tpmLocket(tpm, ["key", "sign", "--label", "se", "--algorithm", algorithm], input: .bytes(input))
            XCTAssertEqual(signed.status, 0, signed.summary)
            try Data(signed.stdout).write(to: URL(fileURLWithPath: path("sig")))
            tool(openssl, ["dgst", "-sha256", "-verify", path("se.pub"), "-signature", path("sig"), path("msg")])
            // locket verifies its own signature from the public key alone.
            XCTAssertEqual(locket(["key", "verify", "--label", "se", "--algorithm", algorithm, "--signature", path("sig")],
                                  input: .bytes(input)).status, 0)
        }
        // A Secure Enclave key signs with SHA-256 only, as Apple's.
        let sha384 = tpmLocket(tpm, ["key", "sign", "--label", "se", "--algorithm", "ecdsa-message-x962-sha384"], input: .bytes(message))
        assertError(sha384, "errSecParam", -50)
        // ECIES: encrypted to the public key (no TPM), decrypted through the TPM.
        let secret = Array("the plaintext, opened in the TPM".utf8)
        let sealed = locket(["key", "encrypt", "--label", "se", "--algorithm", "ecies-cofactor-variable-iv-x963-sha256-aesgcm"], input: .bytes(secret))
        XCTAssertEqual(sealed.status, 0, sealed.summary)
        let opened = tpmLocket(tpm, ["key", "decrypt", "--label", "se", "--algorithm", "ecies-cofactor-variable-iv-x963-sha256-aesgcm"],
                               input: .bytes(sealed.stdout))
        XCTAssertEqual(opened.stdout, secret, opened.summary)
        // The item: a private EC key of the TPM's token, never extractable.
        let shown = try ok("--json", "find", "--class", "keys", "--label", "se").jsonObject()
        XCTAssertEqual(shown["tokenID"] as? String, "com.apple.setoken", "\(shown)")
        XCTAssertEqual(shown["extractable"] as? Bool, false, "\(shown)")
        XCTAssertEqual(shown["keyClass"] as? String, "private", "\(shown)")
        for format in ["pem", "openssh"] {
            assertError(locket("export", "--format", format, "--class", "keys", "--label", "se"), "errSecDataNotAvailable", -25316)
        }
        // The public key needs no TPM (LOCKET_TPM unset here).
        XCTAssertEqual(locket("key", "public", "--label", "se").stdout, try read("se.pub"))
        let status = tpmLocket(tpm, ["status"])
        XCTAssertTrue(status.out.contains("tpm: \(tpm.tcti) (LOCKET_TPM)"), status.summary)
        let probed = tpmLocket(tpm, ["status", "--tpm"])
        XCTAssertTrue(probed.out.contains("tpm P-256: yes"), probed.summary)
        XCTAssertTrue(probed.out.contains("tpm lockout: not locked out"), probed.summary)
    }

    /// `export --format tss2` writes the TPM's key file: tpm2-openssl signs
    /// with it through the same TPM, and openssl verifies with locket's public key.
    func testTheExportedTSS2FileSignsWithTPM2OpenSSL() throws {
        let tpm = try sharedTPM()
        let modules = tool(openssl, ["version", "-m"]).out.split(separator: "\"").dropFirst().first.map(String.init)
        guard let modules, FileManager.default.fileExists(atPath: modules + "/tpm2.so") else {
            throw XCTSkip("tpm2-openssl is not installed (Debian package tpm2-openssl; make test-deps installs it)")
        }
        try generate(tpm, "interop")
        ok("export", "--format", "tss2", "--label", "interop", "-o", path("interop.tss2"))
        let pem = try read("interop.tss2")
        XCTAssertTrue(String(decoding: pem, as: UTF8.self).hasPrefix("-----BEGIN TSS2 PRIVATE KEY-----"))
        XCTAssertEqual(mode(path("interop.tss2")).map { $0 & 0o777 }, 0o600)
        let provider = ["-provider", "tpm2", "-provider", "default"]
        let tcti = ["TPM2OPENSSL_TCTI": tpm.tcti]
        tool(openssl, ["dgst", "-sha256", "-binary", "-out", path("digest"), path("msg")])
        tool(openssl, ["pkeyutl"] + provider + ["-sign", "-inkey", path("interop.tss2"), "-in", path("digest"), "-out", path("sig")], environment: tcti)
        tool(openssl, ["dgst", "-sha256", "-verify", path("interop.pub"), "-signature", path("sig"), path("msg")])
        let read = tool(openssl, ["pkey"] + provider + ["-in", path("interop.tss2"), "-pubout"], environment: tcti)
        XCTAssertEqual(read.stdout, try self.read("interop.pub"))
        // Only a Secure Enclave key has one; and one is never imported.
        ok("key", "generate", "--type", "p256", "--label", "soft")
        assertError(locket("export", "--format", "tss2", "--label", "soft"), "errSecParam", -50)
        let imported = locket("import", path("interop.tss2"))
        assertError(imported, "errSecParam", -50)
        XCTAssertTrue(imported.err.contains("never imported"), imported.summary)
    }

    // MARK: - ssh through the agent

    /// `locket ssh-agent` offers the TPM key (its public key read from the
    /// key file, no TPM) and signs with it in the TPM: ssh logs in to a
    /// loopback sshd with it, twice through the agent's one helper.
    func testSSHLogsInWithATPMKeyThroughTheAgent() throws {
        let tpm = try sharedTPM()
        _ = try SystemTool.require("ssh", for: "logging in through the agent")
        let sshKeygen = try SystemTool.require("ssh-keygen", for: "the sshd host key")
        let made = tpmLocket(tpm, ["key", "generate", "--type", "p256", "--token", "secure-enclave", "--label", "tpm-ssh", "--openssh"])
        XCTAssertEqual(made.status, 0, made.summary)
        let publicKey = made.out.split(separator: " ").prefix(2).joined(separator: " ")
        try (publicKey + "\n").write(toFile: path("tpm-ssh.pub"), atomically: false, encoding: .utf8)
        let agent: RunningAgent
        do {
            agent = try RunningAgent(program: binary, ["ssh-agent", "-D"], environment: sandbox.environment.merging(["LOCKET_TPM": tpm.tcti]) { $1 })
        } catch let skip as XCTSkip {
            XCTFail("locket ssh-agent did not start: \(skip)")
            throw skip
        }
        defer { agent.stop() }
        var clients = sandbox.environment
        clients["SSH_AUTH_SOCK"] = agent.socket
        let listed = Spawn.run(try SystemTool.require("ssh-add", for: "listing the agent's keys"), ["-L"], environment: clients, input: .devNull, timeout: 30)
        XCTAssertEqual(listed.out, "\(publicKey) tpm-ssh\n", listed.summary)
        let sshd = try LoopbackSSHD(authorizedKeys: [publicKey], sshKeygen: sshKeygen)
        defer { sshd.stop() }
        for round in 1...2 {
            let login = Spawn.run(try SystemTool.require("ssh", for: "logging in"), [
                "-F", "none", "-o", "IdentityAgent=\(agent.socket)", "-o", "IdentitiesOnly=yes", "-o", "IdentityFile=\(path("tpm-ssh.pub"))",
                "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "KexAlgorithms=\(LoopbackSSHD.keyExchange)",
                "-o", "UserKnownHostsFile=\(path("known_hosts"))",
                "-o", "ConnectTimeout=20", "-p", String(sshd.port), "\(sshd.user)@127.0.0.1", "echo in-with-the-tpm-\(round)",
            ], environment: clients, input: .devNull, timeout: 60)
            XCTAssertEqual(login.status, 0, "\(login.summary)\nsshd: \(sshd.log.suffix(2000))\nagent: \(agent.errLines)")
            XCTAssertEqual(login.out, "in-with-the-tpm-\(round)\n")
        }
        XCTAssertEqual(agent.errLines, [])
    }

    // MARK: - Another TPM, no TPM

    /// The keychain on another TPM (the same file, LOCKET_TPM at a second
    /// swtpm): the key is refused by name, nothing is written, and every
    /// other item reads as before; back on its own TPM the key signs again.
    func testAnotherTPMRefusesTheKeyAndDamagesNothing() throws {
        let tpm = try sharedTPM()
        let other = try ownTPM()
        try generate(tpm, "bound")
        add("-s", "svc", "-a", "acct", secret: "still-here")
        let before = try keychainBytes()
        let refused = tpmLocket(other, ["key", "sign", "--label", "bound", "--algorithm", "ecdsa-message-x962-sha256"], input: .bytes(message))
        assertError(refused, "errSecDecode", -26275)
        XCTAssertTrue(refused.err.contains("made by another TPM"), refused.summary)
        XCTAssertEqual(try keychainBytes(), before, "nothing written")
        XCTAssertEqual(String(decoding: secret("-s", "svc", "-a", "acct"), as: UTF8.self), "still-here")
        XCTAssertEqual(tpmLocket(tpm, ["key", "sign", "--label", "bound", "--algorithm", "ecdsa-message-x962-sha256"], input: .bytes(message)).status, 0)
    }

    /// Without LOCKET_TPM and without /dev/tpmrm0: the token is refused with
    /// errSecNotAvailable saying why, and nothing is added; the software form
    /// asked for by name is made.
    func testWithoutATPMTheTokenIsRefusedAndSoftwareEnclaveIsByName() throws {
        guard access("/dev/tpmrm0", F_OK) != 0 else { throw XCTSkip("this machine has /dev/tpmrm0: the refusal needs a machine without a TPM") }
        let refused = locket("key", "generate", "--type", "p256", "--token", "secure-enclave", "--label", "nope")
        assertError(refused, "errSecNotAvailable", -25291)
        XCTAssertTrue(refused.err.contains("no TPM was found: /dev/tpmrm0 does not exist and LOCKET_TPM is not set"), refused.summary)
        XCTAssertEqual(locket("find", "--class", "keys", "--label", "nope").status, 44, "nothing added")
        XCTAssertTrue(locket("status").out.contains("tpm: none (no TPM was found"))
        let made = locket("key", "generate", "--type", "p256", "--token", "software-enclave", "--label", "soft")
        XCTAssertEqual(made.status, 0, made.summary)
        let shown = try ok("--json", "find", "--class", "keys", "--label", "soft").jsonObject()
        XCTAssertEqual(shown["extractable"] as? Bool, false)
        XCTAssertEqual(shown["tokenID"] as? String, "", "a software key is no Secure Enclave key")
        XCTAssertEqual(locket(["key", "sign", "--label", "soft", "--algorithm", "ecdsa-message-x962-sha256"], input: .bytes(message)).status, 0)
        assertError(locket("key", "generate", "--type", "ed25519", "--token", "secure-enclave"), "errSecParam", -50)
        assertError(locket("key", "generate", "--type", "p256", "--token", "enclave"), "errSecParam", -50)
    }

    // MARK: - The TPM's lockout, a TPM that dies

    /// The application password is the key's TPM authorization value: a
    /// wrong one is refused by the TPM, whose own lockout counter
    /// (tpm2_getcap) counts it; the right one signs.
    func testWrongApplicationPasswordsHitTheTPMsLockout() throws {
        let tpm = try ownTPM()
        try generate(tpm, "guarded", ["--access-control", "when-unlocked:application-password", "--application-password-stdin"],
                     input: .text("right password\n"))
        XCTAssertEqual(try lockoutCounter(tpm), 0)
        let sign = ["key", "sign", "--label", "guarded", "--algorithm", "ecdsa-message-x962-sha256", "-i", path("msg"), "--application-password-stdin"]
        let wrong = tpmLocket(tpm, sign, input: .text("wrong password\n"))
        assertError(wrong, "errSecAuthFailed", -25293)
        XCTAssertTrue(wrong.err.contains("1 of 3 failures before the TPM locks out"), wrong.summary)
        XCTAssertEqual(try lockoutCounter(tpm), 1, "the TPM counted it")
        let right = tpmLocket(tpm, sign, input: .text("right password\n"))
        XCTAssertEqual(right.status, 0, right.summary)
        try Data(right.stdout).write(to: URL(fileURLWithPath: path("sig")))
        tool(openssl, ["dgst", "-sha256", "-verify", path("guarded.pub"), "-signature", path("sig"), path("msg")])
        // Without a password and no terminal: the proof is missing, nothing reaches the TPM.
        let missing = tpmLocket(tpm, ["key", "sign", "--label", "guarded", "--algorithm", "ecdsa-message-x962-sha256", "-i", path("msg")])
        assertError(missing, "errSecInteractionNotAllowed", -25308)
        XCTAssertEqual(try lockoutCounter(tpm), 1)
        for _ in 0..<2 { assertError(tpmLocket(tpm, sign, input: .text("wrong password\n")), "errSecAuthFailed", -25293) }
        let locked = tpmLocket(tpm, sign, input: .text("right password\n"))
        assertError(locked, "errSecAuthFailed", -25293)
        XCTAssertTrue(locked.err.contains("dictionary-attack lockout"), locked.summary)
    }

    /// swtpm killed while `key sign` waits for it: errSecIO at once, not a
    /// hang, and the keychain's bytes unchanged.
    func testATPMKilledMidSignatureIsAClearErrorAndWritesNothing() throws {
        let tpm = try ownTPM()
        try generate(tpm, "dying")
        let before = try keychainBytes()
        tpm.pause()
        let swtpm = tpm.pid
        DispatchQueue.global().asyncAfter(deadline: .now() + 1) { kill(swtpm, SIGKILL) }
        let started = Date()
        let lost = tpmLocket(tpm, ["key", "sign", "--label", "dying", "--algorithm", "ecdsa-message-x962-sha256"], input: .bytes(message))
        XCTAssertLessThan(Date().timeIntervalSince(started), 15)
        assertError(lost, "errSecIO", -36)
        XCTAssertTrue(lost.err.contains("the TPM stopped answering") || lost.err.contains("locket-tpm stopped"), lost.summary)
        XCTAssertEqual(try keychainBytes(), before)
    }

    /// TPM2_PT_LOCKOUT_COUNTER as tpm2_getcap reads it; a skip without tpm2-tools.
    private func lockoutCounter(_ tpm: SoftwareTPM) throws -> Int {
        let getcap = try SystemTool.require("tpm2_getcap", for: "reading the TPM's lockout counter (Debian package tpm2-tools)")
        let listing = tool(getcap, ["properties-variable"], environment: ["TPM2TOOLS_TCTI": tpm.tcti]).out
        let line = try XCTUnwrap(listing.split(separator: "\n").first { $0.hasPrefix("TPM2_PT_LOCKOUT_COUNTER:") }, listing)
        return try XCTUnwrap(Int(line.split(separator: "x").last ?? "", radix: 16), String(line))
    }
}
