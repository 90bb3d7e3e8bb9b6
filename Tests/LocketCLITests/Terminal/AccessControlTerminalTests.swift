import Foundation
import LocketCore
import LocketTestSupport
import XCTest

/// SPEC §14 at a real terminal (the pty driver): items with access control
/// ask for the keychain password at /dev/tty with the reason, refuse a wrong
/// one, honour the reuse window and its end, die with `passwd`
/// (password-current-set), and take an application password from stdin.
final class AccessControlTerminalTests: XCTestCase {
    private var home: URL!
    private let password = "tty-keychain-pw"

    override func setUpWithError() throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("locket-ac-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home.appendingPathComponent("run"), withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: home.path)
        // What `init --password-stdin` makes, made in-process at libsodium's
        // minimum cost (EndToEndCase.initKeychain): every password asked at
        // the terminal is hashed at the keychain's cost, and these tests are
        // about the prompts, not the hash. Its header authenticates on this
        // device, so the binary opens it.
        let environment = Environment(self.environment)
        try Keychain.create(at: try environment.keychainPath(nil), password: SecureBytes(copying: Array(password.utf8)),
                            kdf: .weakForTests, environment: environment)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: home) }

    private var environment: [String: String] {
        ["PATH": "/usr/bin:/bin", "HOME": home.path, "XDG_RUNTIME_DIR": home.appendingPathComponent("run").path, "LOCKET_SESSION": "dir"]
    }

    private func binary() throws -> String {
        guard let path = LocketBinary.path else { throw XCTSkip("no locket binary built") }
        return path
    }

    /// Runs locket without a controlling terminal (setsid), as a CI job does.
    @discardableResult
    private func expect(_ status: Int32, _ arguments: [String], input: Input = .devNull,
                        file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        let result = Spawn.run("/usr/bin/setsid", ["-w", try binary()] + arguments, environment: environment, input: input, timeout: 30)
        XCTAssertFalse(result.timedOut, result.summary, file: file, line: line)
        XCTAssertEqual(result.status, status, result.summary, file: file, line: line)
        return result
    }

    /// Runs `script` (locket is `$L`) in one shell at a pty: one terminal session.
    private func atTerminal(_ script: String, answers: [String], file: StaticString = #filePath, line: UInt = #line) throws -> (status: Int32, screen: String) {
        var env = environment
        env["L"] = try binary()
        let result = TerminalDriver.run("/bin/sh", ["-c", script], answers: answers, environment: env, timeout: 30)
        XCTAssertFalse(result.timedOut, result.summary, file: file, line: line)
        return (result.status ?? -1, result.out)
    }

    private func add(_ account: String, _ control: String, secret: String) throws {
        try expect(0, ["add", "-s", "svc", "-a", account, "--access-control", control, "-w"], input: .text(secret + "\n"))
    }

    private func count(_ needle: String, in haystack: String) -> Int { haystack.components(separatedBy: needle).count - 1 }

    func testThePromptShowsTheReasonAndOnlyTheRightPasswordGivesTheSecret() throws {
        try add("up", "when-unlocked:user-presence", secret: "presence-secret-1")
        let right = try atTerminal("$L find -s svc -a up -w --prompt 'deploy needs the registry token'", answers: [password])
        XCTAssertEqual(right.status, 0, right.screen)
        XCTAssertTrue(right.screen.contains("deploy needs the registry token\r\nKeychain password for "), right.screen)
        XCTAssertTrue(right.screen.contains("presence-secret-1"), right.screen)
        XCTAssertFalse(right.screen.contains(password), "the password was echoed: \(right.screen)")

        let defaultReason = try atTerminal("$L find -s svc -a up -w", answers: [password])
        XCTAssertTrue(defaultReason.screen.contains("locket find wants to read \"svc\", which needs user presence"), defaultReason.screen)

        let wrong = try atTerminal("$L find -s svc -a up -w", answers: ["not-the-password"])
        XCTAssertEqual(wrong.status, 51, wrong.screen)
        XCTAssertTrue(wrong.screen.contains("errSecAuthFailed -25293"), wrong.screen)
        XCTAssertFalse(wrong.screen.contains("presence-secret-1"), wrong.screen)

        // The attributes need no proof; the secret does, even while unlocked.
        XCTAssertTrue(try expect(0, ["find", "-s", "svc", "-a", "up"]).out.contains("access-control: when-unlocked:user-presence"))
    }

    func testWithoutATerminalTheReadFailsAtOnce() throws {
        try add("up", "when-unlocked:user-presence", secret: "presence-secret-2")
        let result = try expect(36, ["find", "-s", "svc", "-a", "up", "-w"], input: .silentPipe)
        XCTAssertLessThan(result.duration, 10)
        XCTAssertTrue(result.err.contains("errSecInteractionNotAllowed -25308"), result.err)
        XCTAssertFalse(result.out.contains("presence-secret-2"))
    }

    func testTheReuseWindowServesTheSameTerminalSessionAndExpires() throws {
        try add("up", "when-unlocked:user-presence", secret: "reused-secret")
        let find = "$L find -s svc -a up -w"
        // Default 0: every read asks.
        let none = try atTerminal("\(find) && \(find)", answers: [password, password])
        XCTAssertEqual(none.status, 0, none.screen)
        XCTAssertEqual(count("Keychain password for", in: none.screen), 2, none.screen)

        XCTAssertEqual(try atTerminal("$L settings --presence-reuse 5", answers: [password]).status, 0)
        let reused = try atTerminal("\(find) && \(find) && sleep 6 && \(find)", answers: [password, password])
        XCTAssertEqual(reused.status, 0, reused.screen)
        XCTAssertEqual(count("reused-secret", in: reused.screen), 3, reused.screen)
        XCTAssertEqual(count("Keychain password for", in: reused.screen), 2, "asked once, reused once, asked after expiry: \(reused.screen)")

        // Another terminal session does not share the window; nor does lock leave it open.
        let fresh = try atTerminal(find, answers: [password])
        XCTAssertEqual(count("Keychain password for", in: fresh.screen), 1, fresh.screen)
        let locked = try atTerminal("\(find) && $L lock && printf '%s\\n' '\(password)' | $L unlock --password-stdin && \(find)",
                                    answers: [password, password])
        XCTAssertEqual(locked.status, 0, locked.screen)
        XCTAssertEqual(count("Keychain password for", in: locked.screen), 2, locked.screen)
    }

    /// Issue 31, item 2: lengthening the reuse window needs the keychain
    /// password at the terminal, locked or not; without a terminal it is
    /// errSecInteractionNotAllowed and nothing changes; shortening is free.
    func testLengtheningTheReuseWindowAsksForThePassword() throws {
        func reuse() throws -> Int? { try expect(0, ["--json", "settings"]).jsonObject()["presenceReuse"] as? Int }
        let refused = try expect(36, ["settings", "--timeout", "60", "--presence-reuse", "300"])
        XCTAssertTrue(refused.err.contains("errSecInteractionNotAllowed -25308"), refused.err)
        XCTAssertTrue(refused.err.contains("locket: hint: a longer presence reuse window needs the keychain password"), refused.err)
        XCTAssertEqual(try reuse(), 0)
        XCTAssertEqual(try expect(0, ["--json", "settings"]).jsonObject()["timeout"] as? Int, 300, "a refused command changed the timeout")
        try expect(0, ["lock"])
        try expect(36, ["settings", "--presence-reuse", "300"])
        XCTAssertEqual(try reuse(), 0, "widened while locked")

        let wrong = try atTerminal("$L settings --presence-reuse 300", answers: ["not-the-password"])
        XCTAssertEqual(wrong.status, 51, wrong.screen)
        XCTAssertEqual(try reuse(), 0)
        let right = try atTerminal("$L settings --presence-reuse 300", answers: [password])
        XCTAssertEqual(right.status, 0, right.screen)
        XCTAssertTrue(right.screen.contains("locket settings needs the keychain password to lengthen the presence reuse window"), right.screen)
        XCTAssertEqual(try reuse(), 300)

        try expect(0, ["settings", "--presence-reuse", "20"])
        XCTAssertEqual(try reuse(), 20)
    }

    func testPasswdInvalidatesPasswordCurrentSetButNotUserPresence() throws {
        try add("pcs", "when-unlocked:password-current-set", secret: "bound-secret")
        try add("up", "when-unlocked:user-presence", secret: "kept-secret")
        let before = try atTerminal("$L find -s svc -a pcs -w", answers: [password])
        XCTAssertTrue(before.screen.contains("bound-secret"), before.screen)

        let changed = try atTerminal("$L passwd", answers: [password, "second-pw", "second-pw"])
        XCTAssertEqual(changed.status, 0, changed.screen)

        let gone = try atTerminal("$L find -s svc -a pcs -w", answers: ["second-pw"])
        XCTAssertEqual(gone.status, 51, gone.screen)
        XCTAssertTrue(gone.screen.contains("bound to an earlier keychain password"), gone.screen)
        XCTAssertFalse(gone.screen.contains("Keychain password for"), "nothing to ask for: \(gone.screen)")
        XCTAssertFalse(gone.screen.contains("bound-secret"), gone.screen)

        let kept = try atTerminal("$L find -s svc -a up -w", answers: ["second-pw"])
        XCTAssertEqual(kept.status, 0, kept.screen)
        XCTAssertTrue(kept.screen.contains("kept-secret"), kept.screen)

        let dump = try expect(0, ["--json", "dump"]).jsonArray()
        XCTAssertEqual(dump.first { $0["account"] as? String == "pcs" }?["status"] as? String, "invalidated")
        XCTAssertEqual(dump.first { $0["account"] as? String == "up" }?["status"] as? String, "available")
        try expect(0, ["delete", "-s", "svc", "-a", "pcs"])
        try expect(44, ["find", "-s", "svc", "-a", "pcs"])
    }

    func testApplicationPasswordFromStandardInput() throws {
        let secretFile = home.appendingPathComponent("secret").path
        try Data("app-secret".utf8).write(to: URL(fileURLWithPath: secretFile))
        try expect(0, ["add", "-s", "svc", "-a", "app", "--access-control", "after-first-unlock:application-password",
                       "--application-password-stdin", "--data-file", secretFile], input: .text("app-pw\n"))
        XCTAssertEqual(try expect(0, ["find", "-s", "svc", "-a", "app", "-w", "--application-password-stdin"], input: .text("app-pw\n")).out,
                       "app-secret\n")
        let wrong = try expect(51, ["find", "-s", "svc", "-a", "app", "-w", "--application-password-stdin"], input: .text("other\n"))
        XCTAssertFalse(wrong.out.contains("app-secret"))
        try expect(36, ["find", "-s", "svc", "-a", "app", "-w"])
        // Two readers of stdin are refused before anything is read.
        try expect(2, ["add", "-s", "svc", "-a", "x", "--access-control", "ak:application-password", "--application-password-stdin", "-w"],
                   input: .text("a\nb\n"))

        // At the terminal: asked twice at add, once at find.
        let typed = try atTerminal("printf 'tty-app-secret' > \(home.path)/s2 && $L add -s svc -a app2 --access-control ak:application-password --data-file \(home.path)/s2 && $L find -s svc -a app2 -w",
                                   answers: ["typed-app-pw", "typed-app-pw", "typed-app-pw"])
        XCTAssertEqual(typed.status, 0, typed.screen)
        XCTAssertEqual(count("Application password for \"svc\": ", in: typed.screen), 2, typed.screen)
        XCTAssertTrue(typed.screen.contains("tty-app-secret"), typed.screen)
        XCTAssertFalse(typed.screen.contains("typed-app-pw"), typed.screen)
    }

    /// A one-time code's seed is a secret: `otp` asks for the item's proof as `find -w` does.
    func testOneTimeCodeAsksForTheItemsProof() throws {
        let seed = "otpauth://totp/ci?secret=JBSWY3DPEHPK3PXP"
        let seedFile = home.appendingPathComponent("seed").path
        try Data(seed.utf8).write(to: URL(fileURLWithPath: seedFile))
        try expect(0, ["add", "-s", "svc", "-a", "otp-app", "--access-control", "after-first-unlock:application-password",
                       "--application-password-stdin", "--data-file", seedFile], input: .text("otp-app-pw\n"))
        try expect(36, ["otp", "-s", "svc", "-a", "otp-app"])
        let code = try expect(0, ["otp", "-s", "svc", "-a", "otp-app", "--application-password-stdin"], input: .text("otp-app-pw\n")).out
        XCTAssertNotNil(code.range(of: "^[0-9]{6}\n$", options: .regularExpression), code)
        try expect(51, ["otp", "-s", "svc", "-a", "otp-app", "--application-password-stdin"], input: .text("other\n"))

        try add("otp-up", "when-unlocked:user-presence", secret: seed)
        let asked = try atTerminal("$L otp -s svc -a otp-up --prompt 'the deploy needs a code'", answers: [password])
        XCTAssertEqual(asked.status, 0, asked.screen)
        XCTAssertTrue(asked.screen.contains("the deploy needs a code"), asked.screen)
        XCTAssertNotNil(asked.screen.range(of: "\n[0-9]{6}\r?\n", options: .regularExpression), asked.screen)
        XCTAssertFalse(asked.screen.contains("JBSWY3DPEHPK3PXP"), asked.screen)
    }

    /// Every use asks, not only find: exec's references go through the same prompt.
    func testExecAsksAtTheTerminalAndFailsWithoutOne() throws {
        try add("up", "when-unlocked:user-presence", secret: "exec-secret")
        let asked = try atTerminal("$L exec --env T=svc/up -- sh -c 'echo child-got-$T'", answers: [password])
        XCTAssertEqual(asked.status, 0, asked.screen)
        XCTAssertTrue(asked.screen.contains("locket exec wants to read \"svc\""), asked.screen)
        XCTAssertTrue(asked.screen.contains("child-got-exec-secret"), asked.screen)
        let refused = try expect(36, ["exec", "--env", "T=svc/up", "--", "sh", "-c", "echo child-ran"])
        XCTAssertFalse(refused.out.contains("child-ran"), refused.summary)
    }

    /// A key added non-extractable with access control: find -w, find -g and
    /// export refuse it (errSecDataNotAvailable) before any proof is asked
    /// for, at a terminal or from stdin; a proof is never spent on a value
    /// that would not be returned. Using the key still asks.
    func testANonExtractableKeyIsRefusedBeforeItsProofIsAskedFor() throws {
        try expect(0, ["key", "generate", "--type", "ed25519", "--label", "kept-in", "--non-extractable",
                       "--access-control", "when-unlocked:user-presence"])
        for command in ["find --class keys --label kept-in -w", "find --class keys --label kept-in -g",
                        "export --format pem --class keys --label kept-in"] {
            let refused = try atTerminal("$L \(command)", answers: [password])
            XCTAssertEqual(refused.status, 28, "\(command): \(refused.screen)")
            XCTAssertTrue(refused.screen.contains("errSecDataNotAvailable -25316"), "\(command): \(refused.screen)")
            XCTAssertFalse(refused.screen.contains("Keychain password for"), "\(command) asked for a proof: \(refused.screen)")
            let intoFile = try atTerminal("$L \(command) > \(home.path)/out", answers: [password])
            XCTAssertEqual(intoFile.status, 28, "\(command) > out: \(intoFile.screen)")
            XCTAssertFalse(intoFile.screen.contains("Keychain password for"), "\(command) > out asked for a proof: \(intoFile.screen)")
            // Without a terminal: the refusal, not errSecInteractionNotAllowed (which would say a terminal could help).
            try expect(28, command.split(separator: " ").map(String.init))
        }
        // Its public key is free (issue 31); a use of the private key asks.
        try expect(0, ["key", "public", "--label", "kept-in", "--openssh"])
        let used = try atTerminal("printf m | $L key sign --label kept-in --algorithm ed25519 > /dev/null", answers: [password])
        XCTAssertEqual(used.status, 0, used.screen)
        XCTAssertTrue(used.screen.contains("Keychain password for"), used.screen)

        // An application password from stdin is not even checked: a wrong one meets the same refusal.
        try expect(0, ["key", "generate", "--type", "p256", "--label", "app-kept", "--non-extractable",
                       "--access-control", "after-first-unlock:application-password", "--application-password-stdin"],
                   input: .text("right-app-pw\n"))
        let wrong = try expect(28, ["find", "--class", "keys", "--label", "app-kept", "-w", "--application-password-stdin"],
                               input: .text("wrong-app-pw\n"))
        XCTAssertTrue(wrong.err.contains("errSecDataNotAvailable -25316"), wrong.err)
    }

    /// Keys (SPEC §12) take access control at key generate and import: the
    /// private key then needs the proof wherever it is read (key public reads it).
    func testKeyGenerateAndImportTakeAccessControl() throws {
        let generated = try expect(0, ["key", "generate", "--type", "ed25519", "--label", "ac-key",
                                       "--access-control", "when-unlocked:user-presence", "--openssh"])
        XCTAssertTrue(generated.out.hasPrefix("ssh-ed25519 "), generated.summary)
        // Issue 31: the public key is not the protected part (Apple gives it out
        // freely): key public needs no terminal, no password; the private key does.
        XCTAssertEqual(try expect(0, ["key", "public", "--label", "ac-key", "--openssh"]).out, generated.out)
        let shown = try atTerminal("$L key public --label ac-key --openssh --prompt 'show the signing key'", answers: [])
        XCTAssertEqual(shown.status, 0, shown.screen)
        XCTAssertFalse(shown.screen.contains("Keychain password for"), "key public asked for the password: \(shown.screen)")
        XCTAssertTrue(shown.screen.contains(generated.out.trimmingCharacters(in: .whitespacesAndNewlines)), shown.screen)
        XCTAssertTrue(try expect(0, ["find", "--class", "keys", "--label", "ac-key"]).out.contains("access-control: when-unlocked:user-presence"))
        try expect(36, ["find", "--class", "keys", "--label", "ac-key", "-w"])
        try expect(36, ["export", "--format", "openssh", "--label", "ac-key"])
        // At a terminal the export asks, as find -w does; -l and -g as everywhere (issue 30).
        let exported = try atTerminal("$L export --format openssh -l ac-key -g default --prompt 'back up the signing key'",
                                      answers: [password])
        XCTAssertEqual(exported.status, 0, exported.screen)
        XCTAssertTrue(exported.screen.contains("back up the signing key\r\nKeychain password for "), exported.screen)
        XCTAssertTrue(exported.screen.contains("BEGIN OPENSSH PRIVATE KEY"), exported.screen)
        XCTAssertEqual(try expect(0, ["key", "public", "-l", "ac-key", "-g", "default", "--openssh"]).out, generated.out)

        // Every use asks: key sign fails without a terminal and signs with the password.
        let message = home.appendingPathComponent("message").path
        try Data("sign me".utf8).write(to: URL(fileURLWithPath: message))
        let signature = home.appendingPathComponent("message.sig").path
        try expect(36, ["key", "sign", "--label", "ac-key", "--algorithm", "ed25519", "-i", message, "-o", signature])
        XCTAssertFalse(FileManager.default.fileExists(atPath: signature))
        let signed = try atTerminal("$L key sign --label ac-key --algorithm ed25519 -i \(message) -o \(signature)", answers: [password])
        XCTAssertEqual(signed.status, 0, signed.screen)
        XCTAssertTrue(signed.screen.contains("locket key wants to use \"ac-key\""), signed.screen)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: signature)).count, 64)
        try expect(206, ["key", "generate", "--type", "ed25519", "--label", "both", "--accessible", "when-unlocked",
                         "--access-control", "when-unlocked:user-presence"])

        let pem = home.appendingPathComponent("imported.pem").path
        let openssl = Spawn.run("/usr/bin/openssl", ["genpkey", "-algorithm", "ed25519", "-out", pem], environment: environment,
                                input: .devNull, timeout: 30)
        guard openssl.status == 0 else { throw XCTSkip("openssl could not make a key: \(openssl.summary)") }
        try expect(0, ["import", pem, "--label", "imp", "--access-control", "when-unlocked:application-password",
                       "--application-password-stdin"], input: .text("key-app-pw\n"))
        try expect(36, ["find", "--class", "keys", "--label", "imp", "-w"])
        try expect(51, ["find", "--class", "keys", "--label", "imp", "-w", "--application-password-stdin"], input: .text("wrong\n"))
        let der = try expect(0, ["find", "--class", "keys", "--label", "imp", "-w", "--application-password-stdin"], input: .text("key-app-pw\n"))
        XCTAssertGreaterThan(der.stdout.count, 40, der.summary)
        // Its public key needs no application password either; signing does.
        let opensslPublic = Spawn.run("/usr/bin/openssl", ["pkey", "-in", pem, "-pubout"], environment: environment, input: .devNull, timeout: 30)
        XCTAssertEqual(try expect(0, ["key", "public", "--label", "imp"]).out, opensslPublic.out)
        try expect(36, ["key", "sign", "--label", "imp", "--algorithm", "ed25519", "-i", message])
    }

    func testTheRefusalsOfAdd() throws {
        let both = try expect(206, ["add", "-s", "svc", "-a", "x", "--accessible", "when-unlocked",
                                    "--access-control", "when-unlocked:user-presence", "-w"], input: .text("s\n"))
        XCTAssertTrue(both.err.contains("errSecParam -50"), both.err)
        try expect(206, ["add", "-s", "svc", "-a", "x", "--access-control", "when-unlocked:face-id", "-w"], input: .text("s\n"))
        try expect(0, ["-k", "bare", "init", "--no-password"])
        let bare = try expect(53, ["-k", "bare", "add", "-s", "svc", "--access-control", "when-unlocked:password-current-set", "-w"],
                              input: .text("s\n"))
        XCTAssertTrue(bare.err.contains("errSecNotAvailable -25291"), bare.err)
    }
}
