import Foundation
import XCTest

/// Issue 13's rules for keys and certificates: non-extractable keys,
/// uniqueness, identity deletion, locking and access groups as for
/// passwords, and bad key files that add nothing.
final class EndToEndKeysPolicyTests: EndToEndCase {
    /// Engine and command-line logic: in-process through `CLI.run` (issue 38);
    /// what needs the binary here (another process, a terminal, its own name) runs it.
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        makeKey("p256", "leaf.key")
        makeLeaf(key: "leaf.key", cert: "leaf.pem", cn: "leaf.example.com")
        makePKCS12(key: "leaf.key", cert: "leaf.pem", out: "leaf.p12")
    }

    func testNonExtractableKeyIsUsedButNeverLeaves() throws {
        expect(0, "import", key("leaf.p12"), "--passphrase-stdin", "--non-extractable", "--tag", "ne", input: .text(Self.keyPassphrase + "\n"))
        XCTAssertEqual(expect(0, "find", "--class", "keys", "--tag", "ne").fields["extractable"], "0")
        for args in [["find", "--class", "keys", "--tag", "ne", "-w"], ["find", "--class", "keys", "--tag", "ne", "-g"],
                     ["export", "--format", "pem", "--class", "keys", "--tag", "ne", "-o", key("x.pem")],
                     ["export", "--format", "openssh", "--tag", "ne", "-o", key("x.ssh")]] {
            let result = locket(args)
            XCTAssertEqual(result.status, 28, result.summary)
            assertError(result, "errSecDataNotAvailable", -25316)
        }
        let p12 = locket(["export", "--format", "pkcs12", "--tag", "ne", "--passphrase-stdin", "-o", key("x.p12")], input: .text("pw\n"))
        XCTAssertEqual(p12.status, 28, p12.summary)
        for name in ["x.pem", "x.ssh", "x.p12"] { XCTAssertFalse(FileManager.default.fileExists(atPath: key(name)), "\(name) was written") }
        // Its public half, its certificate and its identity are there to use.
        XCTAssertEqual(expect(0, "key", "public", "--tag", "ne").out, opensslPublicKey(key("leaf.key")))
        expect(0, "export", "--format", "pem", "--class", "cert", "--label", "leaf.example.com")
        expect(0, "find", "--class", "identity", "--tag", "ne")
        let dump = try XCTUnwrap(try locket("--json", "dump", "--data").json() as? [[String: Any]])
        XCTAssertNil(dump.first { $0["class"] as? String == "keys" }?["dataBase64"], "dump --data lists it without its value")
        let backup = expect(0, "export", "--format", "backup", "--passphrase-stdin", "-o", key("b"), input: .text("pw\n"))
        XCTAssertTrue(backup.err.contains("1 non-extractable key was left out"), backup.err)
        XCTAssertTrue(backup.err.contains("exported 2 items"), backup.err)
        // The backup restores the certificates; the key stayed behind.
        initKeychain("other")
        expect(0, "-k", "other", "import", key("b"), "--passphrase-stdin", input: .text("pw\n"))
        XCTAssertEqual(expect(0, "-k", "other", "find", "--class", "cert", "--label", "leaf.example.com").fields["public-key-hash"],
                       expect(0, "find", "--class", "keys", "--tag", "ne").fields["application-label"])
        expect(44, "-k", "other", "find", "--class", "keys")
        assertError(expect(35, "update", "--class", "keys", "--tag", "ne", "--set", "extractable=true"), "errSecReadOnlyAttr", -25309)
    }

    /// find -w of a certificate or key prints its DER, byte for byte, into a
    /// pipe; at a terminal it refuses (binary, as export --format der does)
    /// and names the text form.
    func testFindPasswordGivesDERToAPipeAndRefusesATerminal() throws {
        expect(0, "import", key("leaf.p12"), "--passphrase-stdin", "--tag", "der", input: .text(Self.keyPassphrase + "\n"))
        let der = openssl(["x509", "-in", key("leaf.pem"), "-outform", "DER"]).stdout
        XCTAssertEqual(expect(0, "find", "--class", "cert", "--label", "leaf.example.com", "-w", "-n").stdout, der)
        XCTAssertEqual(expect(0, "find", "--class", "cert", "--label", "leaf.example.com", "-w").stdout, der + [0x0a])
        let pkcs8 = expect(0, "find", "--class", "keys", "--tag", "der", "-w", "-n").stdout
        XCTAssertTrue(FileManager.default.createFile(atPath: key("found.der"), contents: Data(pkcs8)))
        XCTAssertEqual(openssl(["pkey", "-inform", "DER", "-in", key("found.der"), "-pubout"]).out, opensslPublicKey(key("leaf.key")))

        for (args, named) in [(["find", "--class", "cert", "--label", "leaf.example.com", "-w"], "--class cert"),
                              (["find", "--class", "keys", "--tag", "der", "-w"], "--class keys")] {
            let screen = TerminalDriver.run(binary, args, answers: [], environment: sandbox.environment)
            XCTAssertFalse(screen.timedOut, screen.summary)
            XCTAssertEqual(screen.status, 206, screen.summary)
            XCTAssertTrue(screen.out.contains("is not written to a terminal (errSecParam -50)"), screen.out)
            XCTAssertTrue(screen.out.contains("export --format pem \(named)"), screen.out)
            XCTAssertFalse(screen.out.contains("\u{FFFD}"), "binary reached the terminal: \(screen.out)")
        }
        // What the search would say comes first: no such item, or a key that never leaves (README's tour).
        let missing = TerminalDriver.run(binary, ["find", "--class", "cert", "--label", "no-such-cert", "-w"], answers: [],
                                         environment: sandbox.environment)
        XCTAssertEqual(missing.status, 44, missing.summary)
        // Text forms still reach a terminal.
        let attributes = TerminalDriver.run(binary, ["find", "--class", "cert", "--label", "leaf.example.com"], answers: [],
                                            environment: sandbox.environment)
        XCTAssertEqual(attributes.status, 0, attributes.summary)
    }

    func testSameCertificateTwiceIsDuplicateAndARenewedOneIsASecondItem() throws {
        expect(0, "import", key("leaf.pem"))
        let again = expect(45, "import", key("leaf.pem"))
        assertError(again, "errSecDuplicateItem", -25299)
        makeLeaf(key: "leaf.key", cert: "renewed.pem", cn: "leaf.example.com")
        XCTAssertNotEqual(opensslFingerprint("leaf.pem"), opensslFingerprint("renewed.pem"))
        expect(0, "import", key("renewed.pem"))
        XCTAssertEqual(countItems("cert"), 2, "a new serial is a second item")
        // Update refuses what is derived from the certificate and changes the rest.
        assertError(expect(35, "update", "--class", "cert", "--hash", opensslFingerprint("leaf.pem"), "--set", "subj=00"),
                    "errSecReadOnlyAttr", -25309)
        ok("update", "--class", "cert", "--hash", opensslFingerprint("leaf.pem"), "--set", "label=old", "--set", "comment=c")
        XCTAssertEqual(expect(0, "find", "--class", "cert", "--label", "old").fields["comment"], "c")
    }

    func testIdentityDeletionKeepsAKeyAnotherCertificateStillMatches() throws {
        importKeys("leaf.p12", ["--tag", "shared"])
        makeLeaf(key: "leaf.key", cert: "renewed.pem", cn: "leaf.example.com")
        expect(0, "import", key("renewed.pem"))
        XCTAssertEqual(countItems("identity"), 2)
        let deleted = expect(0, "delete", "--class", "identity", "--hash", opensslFingerprint("leaf.pem"))
        XCTAssertTrue(deleted.err.contains("deleted 1 certificate and 0 private keys"), deleted.err)
        XCTAssertEqual(countItems("keys"), 1, "the renewed certificate still pairs with the key")
        XCTAssertEqual(expect(0, "find", "--class", "identity", "--tag", "shared").fields["hash"],
                       opensslFingerprint("renewed.pem").replacingOccurrences(of: ":", with: "").lowercased())
        assertError(expect(206, "delete", "--class", "identity"), "errSecParam", -50)
        expect(0, "delete", "--class", "identity", "--all")
        XCTAssertEqual(countItems("keys"), 0)
        XCTAssertEqual(countItems("cert"), 1, "the CA certificate is no identity's")
    }

    func testKeysLockAndStayInTheirAccessGroupAsPasswordsDo() throws {
        let apps = writeApps()
        let a = locket(["-e", apps.a, "import", key("leaf.p12"), "--passphrase-stdin", "--tag", "app-a"], input: .text(Self.keyPassphrase + "\n"))
        XCTAssertEqual(a.status, 0, a.summary)
        expect(0, "-e", apps.a, "find", "--class", "identity", "--tag", "app-a")
        expect(44, "-e", apps.b, "find", "--class", "keys", "--tag", "app-a")
        expect(44, "-e", apps.b, "find", "--class", "identity")
        let denied = locket(["-e", apps.b, "import", key("leaf.pem"), "--access-group", "SKMME9E2Y8.groupA"])
        XCTAssertEqual(denied.status, 30, denied.summary)
        // --accessible: a key file's items take the protection class asked for.
        makeKey("p256", "afu.key")
        makeLeaf(key: "afu.key", cert: "afu.pem", cn: "afu.example.com")
        XCTAssertTrue(FileManager.default.createFile(atPath: key("afu.both"), contents: Data(keyFileBytes("afu.key") + keyFileBytes("afu.pem"))))
        expect(0, "import", key("afu.both"), "--accessible", "after-first-unlock", "--tag", "afu")
        XCTAssertEqual(expect(0, "find", "--class", "keys", "--tag", "afu").fields["accessible"], "after-first-unlock")
        ok("lock")
        // Locked: when-unlocked keys are out of reach, after-first-unlock ones are not, as for passwords.
        XCTAssertEqual(expect(0, "find", "--class", "identity", "--label", "afu.example.com").fields["key-tag"], "afu")
        // By tag alone the keys lead: the locked certificates of other identities are never opened.
        XCTAssertEqual(expect(0, "find", "--class", "identity", "--tag", "afu").fields["label"], "afu.example.com")
        for args in [["find", "--class", "keys", "--tag", "app-a"], ["find", "--class", "identity", "--tag", "app-a"], ["key", "public", "--tag", "app-a"],
                     ["key", "generate", "--type", "ed25519"]] {
            let result = locket(args)
            XCTAssertEqual(result.status, 36, result.summary)
            assertError(result, "errSecInteractionNotAllowed", -25308)
        }
        XCTAssertEqual(locket(["import", key("leaf.pem"), "--label", "while locked"]).status, 36)
        expect(0, "unlock", "--password-stdin", input: .text(Self.password + "\n"))
        XCTAssertEqual(countItems("cert"), 3, "nothing was added while locked (the CA, app A's leaf, afu's leaf)")
    }

    func testBadKeyFilesFailWithOneLineAndAddNothing() throws {
        // A wrong passphrase.
        let wrong = locket(["import", key("leaf.p12"), "--passphrase-stdin"], input: .text("not it\n"))
        assertError(wrong, "errSecAuthFailed", -25293)
        // Truncated.
        let p12 = keyFileBytes("leaf.p12")
        XCTAssertTrue(FileManager.default.createFile(atPath: key("short.p12"), contents: Data(p12.prefix(p12.count / 2))))
        XCTAssertEqual(locket(["import", key("short.p12"), "--format", "pkcs12", "--passphrase-stdin"], input: .text(Self.keyPassphrase + "\n")).status, 93)
        // A certificate whose key is not the file's.
        makeKey("p256", "other.key")
        XCTAssertTrue(FileManager.default.createFile(atPath: key("mismatch.pem"), contents: Data(keyFileBytes("other.key") + keyFileBytes("leaf.pem"))))
        assertError(locket(["import", key("mismatch.pem")]), "errSecParam", -50)
        // 10 MB of garbage.
        var garbage = [UInt8](repeating: 0, count: 10 * 1024 * 1024)
        for i in garbage.indices { garbage[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 13) }
        XCTAssertTrue(FileManager.default.createFile(atPath: key("garbage"), contents: Data(garbage)))
        let junk = locket(["import", key("garbage")])
        XCTAssertEqual(junk.status, 93, junk.summary)
        XCTAssertEqual(junk.errLines.filter { $0.hasPrefix("locket: error:") }.count, 1)
        // RC2 (openssl pkcs12 -legacy), which the static libcrypto can't open: the message says how to convert.
        let legacy = Spawn.run("/usr/bin/env", ["openssl", "pkcs12", "-export", "-legacy", "-inkey", key("leaf.key"), "-in", key("leaf.pem"),
                                                "-passout", passFile, "-out", key("rc2.p12")], environment: sandbox.environment, input: .devNull, timeout: 60)
        if legacy.status == 0 {
            let rc2 = importKeys("rc2.p12")
            assertError(rc2, "errSecParam", -50)
            XCTAssertTrue(rc2.err.contains("openssl pkcs12"), "says how to convert: \(rc2.err)")
        } else {
            print("skipping the RC2 case: this openssl can't write RC2 PKCS#12 (-legacy needs its legacy provider): \(legacy.err)")
        }
        XCTAssertEqual(countItems("keys"), 0)
        XCTAssertEqual(countItems("cert"), 0)
    }
}
