import Foundation
import XCTest

/// Issue 3, point 3: the inactivity timeout. The session's last use is its
/// file's modification time (`LOCKET_SESSION=dir`, SessionStore), so the
/// tests set that time rather than sleeping: "idle for N s" is a state the
/// test puts the session in, not a wait that a loaded machine can stretch.
/// In-process on a clock the test sets (issue 38): "now" is the clock's, and
/// a second boundary is where the test puts it, not where a loaded machine
/// happens to run the command.
final class EndToEndAutoLockTests: EndToEndCase {
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        clock = VirtualClock()
        initKeychain()
        add("-s", "wu", secret: "wu-secret")
        add("-s", "afu", "--accessible", "after-first-unlock", secret: "afu-secret")
        ok("lock")
    }

    /// The when-unlocked tier's session file.
    private func sessionFile(file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let directory = sandbox.runtimeDir + "/locket"
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".wu") }
        XCTAssertEqual(names.count, 1, "\(names)", file: file, line: line)
        return directory + "/" + (try XCTUnwrap(names.first, file: file, line: line))
    }

    /// The session's last use: its file's modification time (seconds since 1970).
    private func lastUse(file: StaticString = #filePath, line: UInt = #line) throws -> Double {
        var st = stat()
        XCTAssertEqual(stat(try sessionFile(file: file, line: line), &st), 0, file: file, line: line)
        return Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9
    }

    /// Sets the session's last use to `time`.
    private func setLastUse(_ time: Double, file: StaticString = #filePath, line: UInt = #line) throws {
        let seconds = floor(time)
        let stamp = timespec(tv_sec: Int(seconds), tv_nsec: Int((time - seconds) * 1e9))
        var times = [stamp, stamp]
        XCTAssertEqual(utimensat(AT_FDCWD, try sessionFile(file: file, line: line), &times, 0), 0, file: file, line: line)
    }

    /// The commands' time: the test's clock.
    private var now: Double { clock!.seconds }

    /// Makes the session look `seconds` idle.
    private func idle(_ seconds: Double, file: StaticString = #filePath, line: UInt = #line) throws {
        try setLastUse(now - seconds, file: file, line: line)
    }

    /// Asserts status counts down from `full` seconds of idleness left as of
    /// `since` (a time on the clock): at most `full`, less only by the whole
    /// seconds that passed before status read its clock.
    private func assertSecondsLeft(_ full: Int, since: Double, _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        let left = statusJSON(file: file, line: line)["secondsUntilAutoLock"] as? Int ?? -1
        let passed = Int(ceil(now - since))
        XCTAssertTrue((full - passed - 1...full).contains(left), "\(message): \(left) s left, \(passed) s after", file: file, line: line)
    }

    func testEverySuccessfulUseExtendsTheTimeoutAndIdlenessThenLocks() throws {
        unlock(timeout: "30")
        // Used every 20 s until well past the original expiry (unlock + 30 s): still unlocked,
        // and each use makes the session's last use now.
        for step in 1...3 {
            try idle(20)
            let before = now
            let result = locket("find", "-s", "wu", "-w")
            XCTAssertEqual(result.status, 0, "use \(step), 20 s after the last (timeout 30 s): \(result.summary)")
            XCTAssertGreaterThanOrEqual(try lastUse(), before - 0.01, "use \(step) did not extend the session")
        }
        // Then idle for longer than the timeout: locked, as by lock.
        try idle(31)
        let locked = expect(36, "find", "-s", "wu", "-w")
        XCTAssertTrue(locked.err.contains("errSecInteractionNotAllowed"), locked.summary)
        XCTAssertEqual(statusJSON()["whenUnlocked"] as? String, "locked")
        // Expiry is a lock, not a reboot.
        XCTAssertEqual(secret("-s", "afu"), Array("afu-secret".utf8))
        XCTAssertEqual(statusJSON()["afterFirstUnlock"] as? String, "unlocked")
    }

    /// Idle for less than the timeout, across one more whole-second boundary
    /// than the timeout has seconds: a whole-second comparison (now.sec -
    /// lastUse.sec >= timeout) locks it here. The command reads the clock in
    /// the second the test puts it at (it used to take up to five rounds on
    /// the wall clock, each waiting for a second's start).
    func testTheSessionNeverLocksBeforeItsTimeout() throws {
        unlock(timeout: "30")
        // Last use at x.999 of the second 30 s before now's: 29.02 s idle, 30 whole seconds apart.
        let second = floor(now) + 1
        clock!.set(milliseconds: Int64(second) * 1000 + 20)
        try setLastUse(second - 30 + 0.999)
        let result = locket("find", "-s", "wu", "-w")
        // The premise: the command read its clock before the session was a full 30 s idle.
        XCTAssertLessThan(now, second + 0.999, "the command moved the clock")
        XCTAssertEqual(result.status, 0, "auto-locked after less than 30 s idle with a 30 s timeout: \(result.summary)")
    }

    func testStatusDoesNotExtendTheSessionAndCountsDown() throws {
        // status only looks: polling it must not keep the keychain unlocked, and the
        // seconds it reports must go down.
        let unlocked = now
        unlock(timeout: "30")
        assertSecondsLeft(30, since: unlocked, "right after unlock --timeout 30")
        let aged = now
        try idle(15)
        let agedUse = try lastUse()
        assertSecondsLeft(15, since: aged, "15 s idle of 30")
        XCTAssertEqual(try lastUse(), agedUse, "status moved the session's last use")
        // 31 s after the last real use: locked, whatever status did meanwhile.
        try idle(31)
        _ = statusJSON()
        expect(36, "find", "-s", "wu", "-w")
    }

    func testTimeoutNoneNeverExpires() throws {
        unlock(timeout: "none")
        XCTAssertTrue(statusJSON()["secondsUntilAutoLock"] is NSNull, "no auto-lock: null")
        // A day idle.
        try idle(86_400)
        XCTAssertEqual(secret("-s", "wu"), Array("wu-secret".utf8))
        XCTAssertEqual(statusJSON()["whenUnlocked"] as? String, "unlocked")
    }

    func testSettingsTimeoutIsTheDefaultOfALaterUnlock() throws {
        // Stored without the password (the keychain is locked, stdin is /dev/null).
        ok("settings", "--timeout", "7")
        XCTAssertEqual(ok("settings").out, "timeout: 7\n")
        XCTAssertEqual(try ok("--json", "settings").jsonObject()["timeout"] as? Int, 7)
        XCTAssertEqual(statusJSON()["timeout"] as? Int, 7)
        // unlock without --timeout uses it: the session's last use is set to now right after, so 7 s remain.
        unlock()
        var since = now
        try idle(0)
        var status = statusJSON()
        XCTAssertEqual(status["whenUnlocked"] as? String, "unlocked")
        assertSecondsLeft(7, since: since, "unlock after settings --timeout 7")
        try idle(8)
        expect(36, "find", "-s", "wu", "-w")
        // --timeout overrides it for that unlock only.
        unlock(timeout: "100")
        since = now
        try idle(0)
        assertSecondsLeft(100, since: since, "unlock --timeout 100")
        XCTAssertEqual(statusJSON()["timeout"] as? Int, 7, "unlock --timeout does not change the setting")
        // none: later unlocks never expire.
        ok("settings", "--timeout", "none")
        XCTAssertEqual(ok("settings").out, "timeout: none\n")
        XCTAssertEqual(try ok("--json", "settings").jsonObject()["timeout"] as? String, "none")
        ok("lock")
        unlock()
        status = statusJSON()
        XCTAssertEqual(status["timeout"] as? String, "none")
        XCTAssertTrue(status["secondsUntilAutoLock"] is NSNull, "\(status)")
        XCTAssertEqual(status["whenUnlocked"] as? String, "unlocked")
        // A short stored timeout really expires.
        ok("settings", "--timeout", "1")
        ok("lock")
        unlock()
        try idle(0)
        let short = statusJSON()["secondsUntilAutoLock"] as? Int
        // Within the second it has, status sees it counting down; past it, locked (null): never more than 1.
        XCTAssertTrue(short.map { (0...1).contains($0) } ?? true, "settings --timeout 1: \(String(describing: short))")
        try idle(2.1)
        expect(36, "find", "-s", "wu", "-w")
        // Bad values are usage errors and change nothing.
        for bad in ["0", "-1", "soon", "", "31536001"] {
            XCTAssertEqual(locket("settings", "--timeout", bad).status, 2, "settings --timeout '\(bad)'")
        }
        XCTAssertEqual(ok("settings").out, "timeout: 1\n")
        // The setting belongs to the keychain: another keychain keeps the default.
        let other = sandbox.root + "/other.keychain"
        initKeychain(other)
        XCTAssertEqual(ok("-k", other, "settings").out, "timeout: 300\n")
    }

    /// Moved from EndToEndLockUnlockTests (issue 38): the 2.2 s it slept
    /// past a 1 s timeout are moved on the clock.
    func testAutoLockAfterTimeout() {
        ok("unlock", "--timeout", "1", "--password-stdin", input: .text(Self.password + "\n"))
        XCTAssertEqual(secret("-s", "wu"), Array("wu-secret".utf8))
        clock!.advance(seconds: 2.2)
        expect(36, "find", "-s", "wu", "-w")
        // Auto-lock is a lock, not a reboot: after-first-unlock items stay readable.
        XCTAssertEqual(secret("-s", "afu"), Array("afu-secret".utf8))
        // A bad timeout is refused.
        expect(2, "unlock", "--timeout", "soon", "--password-stdin", input: .text(Self.password + "\n"))
        expect(36, "find", "-s", "wu", "-w")
    }
}
