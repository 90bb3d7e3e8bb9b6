import Foundation
import LocketCLI
import XCTest

/// `lock`, `lock --all`, `unlock`, and what a locked keychain allows.
final class EndToEndLockUnlockTests: EndToEndCase {
    /// Engine and command-line logic: in-process through `CLI.run` (issue 38);
    /// what needs the binary here (another process, a terminal, its own name) runs it.
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    func testWrongPasswordIsAuthFailed() {
        add("-s", "svc", secret: "value")
        // A wrong password while unlocked fails and leaves the session alone.
        expect(51, "unlock", "--password-stdin", input: .text("wrong password\n"))
        XCTAssertEqual(secret("-s", "svc"), Array("value".utf8))
        ok("lock")
        let result = expect(51, "unlock", "--password-stdin", input: .text("wrong password\n"))
        assertError(result, "errSecAuthFailed", -25293)
        // Still locked.
        addExpectingLocked("-s", "nothing-yet")
    }

    func testRightPasswordUnlocks() {
        add("-s", "svc", "-a", "me", secret: "value")
        ok("lock")
        ok("unlock", "--password-stdin", input: .text(Self.password + "\n"))
        XCTAssertEqual(secret("-s", "svc"), Array("value".utf8))
        // Without --password-stdin a non-terminal stdin still carries the password.
        ok("lock")
        ok("unlock", input: .text(Self.password + "\n"))
        XCTAssertEqual(secret("-s", "svc"), Array("value".utf8))
        // A timeout option is accepted.
        ok("lock")
        ok("unlock", "--timeout", "none", "--password-stdin", input: .text(Self.password + "\n"))
        XCTAssertEqual(secret("-s", "svc"), Array("value".utf8))
    }

    func testLockedFindIsInteractionNotAllowedNeverNotFound() {
        add("-s", "svc", "-a", "me", secret: "value")
        ok("lock")
        for args in [["find", "-s", "svc"], ["find", "-s", "svc", "-w"], ["find", "-s", "svc", "-g"],
                     ["find", "-a", "me", "--all"], ["find"], ["--json", "find", "-s", "svc"]] {
            let result = locket(args)
            XCTAssertEqual(result.status, 36, "a locked item must not be reported missing: \(result.summary)")
            XCTAssertTrue(result.err.contains("errSecInteractionNotAllowed"), result.summary)
            XCTAssertTrue(result.err.contains("25308"), result.summary)
        }
        // A query that matches nothing is still "not found".
        expect(44, "find", "-s", "other")
        // Adding or updating a when-unlocked item needs the key too.
        expect(36, "add", "-s", "new", "-w", input: .text("x\n"))
        expect(36, "update", "-s", "svc", "--set", "comment=c")
        ok("unlock", "--password-stdin", input: .text(Self.password + "\n"))
        expect(44, "find", "-s", "new")
        XCTAssertEqual(expect(0, "find", "-s", "svc").fields["comment"], nil, "a failed update changed the item")
    }

    func testDeleteWorksWhileLocked() {
        add("-s", "svc", "-a", "me", secret: "value")
        add("-s", "keep", "-a", "me", secret: "other")
        ok("lock")
        ok("delete", "-s", "svc")
        expect(44, "delete", "-s", "svc")
        ok("unlock", "--password-stdin", input: .text(Self.password + "\n"))
        expect(44, "find", "-s", "svc")
        XCTAssertEqual(secret("-s", "keep"), Array("other".utf8))
    }

    func testAfterFirstUnlockSurvivesLockButNotLockAll() {
        add("-s", "afu", "--accessible", "after-first-unlock", secret: "afu-secret")
        add("-s", "wu", secret: "wu-secret")
        ok("lock")
        XCTAssertEqual(secret("-s", "afu"), Array("afu-secret".utf8))
        expect(36, "find", "-s", "wu", "-w")
        XCTAssertEqual(expect(0, "find", "-s", "afu").fields["accessible"], "after-first-unlock")
        ok("lock", "--all")
        let result = expect(36, "find", "-s", "afu", "-w")
        assertError(result, "errSecInteractionNotAllowed", -25308)
        ok("unlock", "--password-stdin", input: .text(Self.password + "\n"))
        XCTAssertEqual(secret("-s", "afu"), Array("afu-secret".utf8))
        XCTAssertEqual(secret("-s", "wu"), Array("wu-secret".utf8))
    }

    func testAlwaysItemsWarnAndSurviveLockAll() {
        let result = locket("add", "-s", "always", "--accessible", "always", "-w", input: .text("always-secret\n"))
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertEqual(result.errLines.count, 1, result.summary)
        XCTAssertTrue(result.err.hasPrefix("locket: warning: "), "always is deprecated and warns: \(result.summary)")
        // Apple's constant name and the code are accepted too.
        expect(0, "add", "-s", "apple-name", "--accessible", "kSecAttrAccessibleAfterFirstUnlock", "-w", input: .text("x\n"))
        expect(0, "add", "-s", "code", "--accessible", "cku", "-w", input: .text("x\n"))
        XCTAssertEqual(expect(0, "find", "-s", "code").fields["accessible"], "after-first-unlock-this-device-only")
        expect(206, "add", "-s", "bad", "--accessible", "sometimes", "-w", input: .text("x\n"))
        ok("lock", "--all")
        XCTAssertEqual(secret("-s", "always"), Array("always-secret".utf8))
        expect(36, "find", "-s", "apple-name", "-w")
    }

    func testLockAndUnlockOfKeychainWithoutPassword() {
        let other = sandbox.root + "/nopass.keychain"
        ok("-k", other, "init", "--no-password")
        add("-k", other, "-s", "svc", secret: "open")
        let lock = expect(0, "-k", other, "lock")
        XCTAssertTrue(lock.err.contains("no password"), lock.summary)
        XCTAssertEqual(secret("-k", other, "-s", "svc"), Array("open".utf8), "a keychain without a password is always unlocked")
        expect(0, "-k", other, "lock", "--all")
        XCTAssertEqual(secret("-k", other, "-s", "svc"), Array("open".utf8))
        let unlock = expect(0, "-k", other, "unlock")
        XCTAssertTrue(unlock.err.contains("no password"), unlock.summary)
        // A when-passcode-set item needs a password: errSecNotAvailable.
        let akpu = expect(53, "-k", other, "add", "-s", "p", "--accessible", "when-passcode-set-this-device-only", "-w", input: .text("x\n"))
        assertError(akpu, "errSecNotAvailable", -25291)
    }

    func testUnlockWithoutSessionAndStdinDevNullDoesNotHang() {
        ok("lock", "--all")
        for args in [["unlock"], ["unlock", "--password-stdin"]] {
            let result = locket(args, input: .devNull)
            XCTAssertNotEqual(result.status, 0, result.summary)
            XCTAssertNotNil(result.status, result.summary)
            XCTAssertLessThan(result.duration, 10, "unlock waited for a password that cannot come (the run is killed at 20 s)")
            XCTAssertTrue(result.err.hasPrefix("locket: error: "), result.summary)
        }
        // Still locked afterwards.
        expect(44, "find", "-s", "nothing")
    }

    func testUnlockWithSilentOpenStdinGivesUpInsteadOfHanging() {
        // A CI job whose stdin is an idle pipe: without --password-stdin, locket waits a
        // bounded time for a password, then fails instead of hanging. The binary waits
        // 10 s (IO.standard); in-process the same code waits the injected 0.2 s.
        XCTAssertEqual(IO.standard.implicitStdinWait, 10_000)
        ok("lock", "--all")
        let result = InProcessCLI.run(["unlock"], environment: sandbox.environment, input: .silentPipe)
        XCTAssertEqual(result.status, 36, result.summary)
        XCTAssertGreaterThanOrEqual(result.duration, Double(InProcessCLI.implicitStdinWait) / 1000, "gave up without waiting")
        // Well under the binary's 10 s: the injected wait, not the default.
        XCTAssertLessThan(result.duration, 8, result.summary)
        XCTAssertTrue(result.err.hasPrefix("locket: error: no password on standard input and no terminal to ask at"), result.summary)
        // Still locked afterwards.
        expect(44, "find", "-s", "nothing")
    }

    // Helper: an add that must fail because the keychain is locked.
    private func addExpectingLocked(_ arguments: String..., file: StaticString = #filePath, line: UInt = #line) {
        let result = locket(["add"] + arguments + ["-w"], input: .text("x\n"), file: file, line: line)
        XCTAssertEqual(result.status, 36, result.summary, file: file, line: line)
    }
}
