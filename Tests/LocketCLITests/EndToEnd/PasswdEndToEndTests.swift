import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 3, point 6: `passwd` changes, sets and removes the password; only
/// the class keys are re-wrapped, in one transaction, so a crash at any
/// instant leaves exactly one of the two passwords working.
final class EndToEndPasswdTests: EndToEndCase {
    /// Engine and command-line logic: in-process through `CLI.run` (issue 38);
    /// what needs the binary here (another process, a terminal, its own name) runs it.
    override class var inProcess: Bool { true }

    typealias PC = ProtectionClassName

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    private func addOneOfEach(keychain: [String] = [], skip: Set<String> = []) {
        for pc in PC.all where !skip.contains(pc.code) {
            let result = locket(keychain + ["add", "-s", pc.code, "--accessible", pc.code, "-w"], input: .text("secret-\(pc.code)\n"))
            XCTAssertEqual(result.status, 0, result.summary)
        }
    }

    private func assertAllReadable(_ context: String, codes: [String] = PC.all.map(\.code), keychain: [String] = [],
                                   file: StaticString = #filePath, line: UInt = #line) {
        for code in codes {
            let result = locket(keychain + ["find", "-s", code, "-w"], file: file, line: line)
            XCTAssertEqual(result.status, 0, "\(PC.name(code)) \(context): \(result.summary)", file: file, line: line)
            XCTAssertEqual(result.out, "secret-\(code)\n", file: file, line: line)
        }
    }

    private func unlockStatus(_ password: String, keychain: [String] = [], file: StaticString = #filePath, line: UInt = #line) -> Int32? {
        locket(keychain + ["unlock", "--password-stdin"], input: .text(password + "\n"), file: file, line: line).status
    }

    // MARK: - Changing

    func testChangeTakesTheOldThenTheNewPasswordOnStdin() {
        addOneOfEach()
        let result = ok("passwd", input: .text("\(Self.password)\nnew password\n"))
        XCTAssertEqual(result.stdout, [])
        // The class keys are the same: the session stays unlocked.
        assertAllReadable("right after passwd")
        ok("lock", "--all")
        XCTAssertEqual(unlockStatus(Self.password), 51, "the old password no longer unlocks")
        XCTAssertEqual(unlockStatus("new password"), 0)
        assertAllReadable("after lock --all and unlock with the new password")
        XCTAssertEqual(statusJSON()["failedAttempts"] as? Int, 0)
        // And again, back: nothing about the first change sticks.
        ok("passwd", input: .text("new password\n\(Self.password)\n"))
        ok("lock", "--all")
        XCTAssertEqual(unlockStatus("new password"), 51)
        XCTAssertEqual(unlockStatus(Self.password), 0)
        assertAllReadable("after changing back")
    }

    func testWrongOldPasswordIsAuthFailedAndChangesNothing() {
        addOneOfEach()
        let before = dumpWithData()
        let result = expect(51, "passwd", input: .text("not the password\nnew password\n"))
        assertError(result, "errSecAuthFailed", -25293)
        XCTAssertEqual(statusJSON()["failedAttempts"] as? Int, 1, "a wrong old password counts as a failed attempt")
        ok("lock", "--all")
        XCTAssertEqual(unlockStatus("new password"), 51)
        XCTAssertEqual(unlockStatus(Self.password), 0)
        XCTAssertEqual(dumpWithData(), before)
        XCTAssertEqual(statusJSON()["failedAttempts"] as? Int, 0)
    }

    func testEmptyNewPasswordIsRefused() {
        let result = locket("passwd", input: .text("\(Self.password)\n\n"))
        XCTAssertNotEqual(result.status, 0, result.summary)
        XCTAssertTrue(result.err.hasPrefix("locket: error: "), result.summary)
        ok("lock", "--all")
        XCTAssertEqual(unlockStatus(Self.password), 0)
    }

    // MARK: - Setting one

    func testSettingAPasswordOnAKeychainWithoutOne() {
        let open = ["-k", sandbox.root + "/open.keychain"]
        ok(open + ["init", "--no-password"])
        addOneOfEach(keychain: open, skip: ["akpu"])
        // Only the new password is read. (In-process at the minimum cost, as
        // the keychains the tests make: `--kdf` is EndToEndKDFTests'.)
        ok(open + ["passwd"], input: .text("first password\n"))
        XCTAssertEqual(statusJSON(open)["password"] as? Bool, true)
        // From now on it locks and unlocks like any keychain with a password.
        // (Whether passwd leaves it unlocked, as init does, is not pinned here.)
        XCTAssertEqual(unlockStatus("first password", keychain: open), 0)
        assertAllReadable("after unlock with the new password", codes: PC.all.map(\.code).filter { $0 != "akpu" }, keychain: open)
        ok(open + ["lock"])
        expect(36, open + ["find", "-s", "ak", "-w"])
        assertAllReadable("after lock", codes: PC.afterFirstUnlock + PC.always, keychain: open)
        ok(open + ["lock", "--all"])
        expect(36, open + ["find", "-s", "ck", "-w"])
        XCTAssertEqual(unlockStatus("wrong", keychain: open), 51)
        XCTAssertEqual(unlockStatus("first password", keychain: open), 0)
        assertAllReadable("after unlock with the new password", codes: PC.all.map(\.code).filter { $0 != "akpu" }, keychain: open)
        // And it can now hold when-passcode-set items.
        let akpu = locket(open + ["add", "-s", "akpu", "--accessible", "akpu", "-w"], input: .text("secret-akpu\n"))
        XCTAssertEqual(akpu.status, 0, akpu.summary)
        ok(open + ["lock"])
        expect(36, open + ["find", "-s", "akpu", "-w"])
        XCTAssertEqual(unlockStatus("first password", keychain: open), 0)
        assertAllReadable("after adding a when-passcode-set item", keychain: open)
    }

    // MARK: - Removing it

    private func addPasscodeItems() {
        addOneOfEach()
        let second = locket(["add", "-s", "akpu-2", "--accessible", "kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly", "-w"], input: .text("x\n"))
        XCTAssertEqual(second.status, 0, second.summary)
    }

    func testRemoveInAScriptWithoutYesRefusesAndDeletesNothing() {
        addPasscodeItems()
        let counts = itemCounts()
        let before = dumpWithData()
        let result = locket("passwd", "--remove", input: .text(Self.password + "\n"))
        XCTAssertNotEqual(result.status, 0, result.summary)
        XCTAssertNotNil(result.status, result.summary)
        XCTAssertTrue(result.err.hasPrefix("locket: error: "), result.summary)
        XCTAssertTrue(result.err.contains("--yes"), "the message says how to confirm: \(result.summary)")
        XCTAssertTrue(result.err.contains("2"), "the message says how many items would go: \(result.summary)")
        XCTAssertEqual(itemCounts(), counts)
        XCTAssertEqual(dumpWithData(), before)
        XCTAssertEqual(statusJSON()["password"] as? Bool, true)
        ok("lock", "--all")
        XCTAssertEqual(unlockStatus(Self.password), 0, "the password is still there")
        assertAllReadable("after a refused --remove")
    }

    func testRemoveWithYesDeletesExactlyThePasscodeItems() {
        addPasscodeItems()
        var counts = itemCounts()
        let result = locket("passwd", "--remove", "--yes", input: .text(Self.password + "\n"))
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertEqual(result.errLines.count, 1, result.summary)
        XCTAssertTrue(result.err.hasPrefix("locket: warning: ") && result.err.contains("2"), "says what it deleted: \(result.summary)")
        counts["when-passcode-set-this-device-only"] = 0
        XCTAssertEqual(itemCounts(), counts)
        let status = statusJSON()
        XCTAssertEqual(status["password"] as? Bool, false)
        XCTAssertEqual(status["whenUnlocked"] as? String, "unlocked")
        // Password-less: always unlocked; lock says so and changes nothing.
        let lock = expect(0, "lock", "--all")
        XCTAssertTrue(lock.err.hasPrefix("locket: warning: "), lock.summary)
        assertAllReadable("after removing the password and lock --all", codes: PC.all.map(\.code).filter { $0 != "akpu" })
        expect(44, "find", "-s", "akpu")
        expect(44, "find", "-s", "akpu-2")
        // No password to give any more, and none to remove.
        XCTAssertEqual(expect(53, "add", "-s", "akpu-3", "--accessible", "akpu", "-w", input: .text("x\n")).status, 53)
        XCTAssertNotEqual(locket("passwd", "--remove", "--yes").status, 0)
    }

    func testRemoveWithoutPasscodeItemsNeedsNoConfirmation() {
        addOneOfEach(skip: ["akpu"])
        let result = locket("passwd", "--remove", input: .text(Self.password + "\n"))
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertEqual(result.err, "", result.summary)
        XCTAssertEqual(statusJSON()["password"] as? Bool, false)
        assertAllReadable("after removing the password", codes: PC.all.map(\.code).filter { $0 != "akpu" })
    }

    func testRemoveWithAWrongPasswordChangesNothing() {
        addPasscodeItems()
        let counts = itemCounts()
        let result = expect(51, "passwd", "--remove", "--yes", input: .text("wrong\n"))
        assertError(result, "errSecAuthFailed", -25293)
        XCTAssertEqual(itemCounts(), counts)
        XCTAssertEqual(statusJSON()["password"] as? Bool, true)
    }

    // MARK: - Crash safety

    /// `PRAGMA integrity_check` on the keychain file, from this process.
    private func integrityCheck(_ path: String) -> String {
        ReliabilityDatabase.integrity(path).replacingOccurrences(of: "\n", with: "; ")
    }

    func testKilledAtAnyInstantExactlyOneOfOldAndNewUnlocks() throws {
        addOneOfEach()
        let expected = dumpWithData()
        var current = Self.password
        var killed = 0, completed = 0, oldWon = 0, newWon = 0
        // How long an uninterrupted passwd takes here: two Argon2id hashes at
        // the binary's lowest cost (~0.4 s; the first change takes the test
        // keychain there). The re-wrap and its transaction come in the last
        // few milliseconds, so most kills aim there.
        var typical = 0.0
        for round in 0..<2 {
            let next = "measure \(round)"
            let run = ok(["passwd"], input: .text("\(current)\n\(next)\n"))
            current = next
            typical = run.duration
        }
        // Aimed at the commit, found as it goes: later after a kill that landed
        // before it, earlier after one that landed after it.
        var aim = typical
        // 16 rounds under `make soak`, 8 in `make test` (each is four Argon2id
        // hashes; EndToEndReliabilityCrashTests kills passwd more times).
        let rounds = ReliabilityScale.soak ? 16 : 8
        for round in 1...rounds {
            let next = "password \(round)"
            // Rounds 8 and 16 are killed at once and rounds 4 and 12 never are,
            // so both outcomes occur however loaded the machine is; the rest
            // aim at the commit or land anywhere.
            let delay: Double
            switch round % 8 {
            case 0: delay = 0
            case 4: delay = 120
            case 2, 6: delay = Double.random(in: 0...typical)
            default: delay = max(0, aim + Double.random(in: -0.004...0.002))
            }
            let run = Spawn.run(binary, ["passwd"], environment: sandbox.environment,
                                input: .text("\(current)\n\(next)\n"), timeout: delay)
            if run.signal == SIGKILL {
                killed += 1
            } else {
                // Finished just before the kill, or before the deadline.
                completed += 1
                XCTAssertEqual(run.status, 0, "round \(round): \(run.summary)")
                if typical == 0 { typical = run.duration }
            }
            XCTAssertEqual(integrityCheck(sandbox.loginKeychain), "ok", "round \(round), killed after \(delay) s")
            let old = unlockStatus(current)
            let new = unlockStatus(next)
            XCTAssertTrue((old == 0) != (new == 0),
                          "round \(round) (killed after \(delay) s): old password -> \(old ?? -1), new -> \(new ?? -1); exactly one must unlock")
            XCTAssertTrue([0, 51].contains(old) && [0, 51].contains(new), "round \(round): \(old ?? -1) \(new ?? -1)")
            if round % 2 == 1 { aim += run.signal == SIGKILL && new != 0 ? 0.002 : -0.002 }
            if new == 0 { current = next; newWon += 1 } else if old == 0 { oldWon += 1 } else { break }
            XCTAssertEqual(dumpWithData(), expected, "round \(round): the items changed")
            XCTAssertLessThan(statusJSON()["failedAttempts"] as? Int ?? 99, 5, "round \(round): the test would start waiting")
        }
        // Both sides of the commit were hit, or the test proved little.
        XCTAssertGreaterThan(killed, 0)
        XCTAssertGreaterThan(oldWon, 0, "no kill landed before the commit")
        XCTAssertGreaterThan(newWon, 0, "no run committed")
        // And the survivor is a normal keychain: lock, unlock, read every class.
        ok("lock", "--all")
        XCTAssertEqual(unlockStatus(current), 0)
        assertAllReadable("after the crash rounds")
        print("passwd crash rounds: \(killed) killed, \(completed) completed; old password won \(oldWon), new \(newWon); a run takes \(typical) s")
    }

    // MARK: - At a terminal

    /// Runs locket on a pseudo-terminal (Python's pty module), typing one answer per
    /// prompt (a prompt ends in ":" or "]", perhaps then a line break); returns the exit status and the screen.
    private func runAtTerminal(_ arguments: [String], answers: [String]) throws -> (status: Int32, screen: String) {
        let result = TerminalDriver.run(binary, arguments, answers: answers, environment: sandbox.environment)
        XCTAssertFalse(result.timedOut, result.summary)
        return (result.status ?? -1, result.out)
    }

    func testAtATerminalTheNewPasswordIsAskedTwiceWithoutEcho() throws {
        addOneOfEach()
        let changed = try runAtTerminal(["passwd"], answers: [Self.password, "tty-new-password", "tty-new-password"])
        XCTAssertEqual(changed.status, 0, changed.screen)
        XCTAssertTrue(changed.screen.contains("Current password"), changed.screen)
        XCTAssertTrue(changed.screen.contains("Again:"), changed.screen)
        XCTAssertFalse(changed.screen.contains("tty-new-password") || changed.screen.contains(Self.password), "echoed: \(changed.screen)")
        ok("lock", "--all")
        XCTAssertEqual(unlockStatus("tty-new-password"), 0)
        // Two different new passwords: nothing changes.
        let mismatch = try runAtTerminal(["passwd"], answers: ["tty-new-password", "one", "other"])
        XCTAssertNotEqual(mismatch.status, 0, mismatch.screen)
        XCTAssertTrue(mismatch.screen.contains("do not match"), mismatch.screen)
        ok("lock", "--all")
        XCTAssertEqual(unlockStatus("one"), 51)
        XCTAssertEqual(unlockStatus("tty-new-password"), 0)
    }

    func testAtATerminalRemoveAsksBeforeDeletingPasscodeItems() throws {
        addPasscodeItems()
        let counts = itemCounts()
        let declined = try runAtTerminal(["passwd", "--remove"], answers: [Self.password, "n"])
        XCTAssertNotEqual(declined.status, 0, declined.screen)
        XCTAssertTrue(declined.screen.contains("2 when-passcode-set items"), "the question says what goes: \(declined.screen)")
        XCTAssertEqual(itemCounts(), counts, "declined: nothing deleted")
        XCTAssertEqual(statusJSON()["password"] as? Bool, true)
        let accepted = try runAtTerminal(["passwd", "--remove"], answers: [Self.password, "y"])
        XCTAssertEqual(accepted.status, 0, accepted.screen)
        XCTAssertEqual(itemCounts()["when-passcode-set-this-device-only"], 0)
        XCTAssertEqual(statusJSON()["password"] as? Bool, false)
        assertAllReadable("after removing at a terminal", codes: PC.all.map(\.code).filter { $0 != "akpu" })
    }

    // MARK: - Help

    func testHelpAndManDescribePasswd() throws {
        let help = ok("help", "passwd").out
        XCTAssertTrue(help.contains("--remove") && help.contains("--yes"), help)
        let man = try String(contentsOfFile: LocketBinary.repositoryRoot + "/man/locket.1", encoding: .utf8)
        XCTAssertTrue(man.contains("when-passcode-set-this-device-only item is deleted"), "the man page says what --remove deletes")
    }
}
