import Foundation
import XCTest

/// Issue 3, point 3: the inactivity timeout. Timeouts are 2-3 s, and the
/// tests line their steps up with the wall clock's seconds, because the
/// session's last use is kept with a file time.
final class EndToEndAutoLockTests: EndToEndCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        add("-s", "wu", secret: "wu-secret")
        add("-s", "afu", "--accessible", "after-first-unlock", secret: "afu-secret")
        ok("lock")
    }

    func testEverySuccessfulUseExtendsTheTimeoutAndIdlenessThenLocks() {
        // Steps at x.2 s: clear of second boundaries however the session rounds its times.
        Self.sleepUntilFraction(0.2)
        unlock(timeout: "2")
        let start = Self.wallClock()
        // Used every second until well past the original expiry (start + 2 s): still unlocked.
        for step in 1...3 {
            usleep(UInt32(max(0, start + Double(step) - Self.wallClock()) * 1_000_000))
            let result = locket("find", "-s", "wu", "-w")
            XCTAssertEqual(result.status, 0, "use \(step) s after unlock (timeout 2 s, used every second): \(result.summary)")
        }
        // Then idle for longer than the timeout: locked, as by lock.
        usleep(2_300_000)
        let locked = expect(36, "find", "-s", "wu", "-w")
        XCTAssertTrue(locked.err.contains("errSecInteractionNotAllowed"), locked.summary)
        XCTAssertEqual(statusJSON()["whenUnlocked"] as? String, "locked")
        // Expiry is a lock, not a reboot.
        XCTAssertEqual(secret("-s", "afu"), Array("afu-secret".utf8))
        XCTAssertEqual(statusJSON()["afterFirstUnlock"] as? String, "unlocked")
    }

    func testTheSessionNeverLocksBeforeItsTimeout() {
        // Unlock late in a second, then use it 1.3 s later: well inside a 2 s timeout.
        // A whole-second comparison (now.sec - lastUse.sec >= timeout) locks it here.
        Self.sleepUntilFraction(0.85)
        unlock(timeout: "2")
        let unlocked = Self.wallClock()
        usleep(1_300_000)
        let result = locket("find", "-s", "wu", "-w")
        XCTAssertEqual(result.status, 0,
                       "auto-locked after \(String(format: "%.2f", Self.wallClock() - unlocked)) s idle with a 2 s timeout: \(result.summary)")
    }

    func testStatusDoesNotExtendTheSessionAndCountsDown() {
        // status only looks: polling it must not keep the keychain unlocked, and the
        // seconds it reports must go down.
        Self.sleepUntilFraction(0.2)
        unlock(timeout: "3")
        XCTAssertTrue((2...3).contains(statusJSON()["secondsUntilAutoLock"] as? Int ?? -1))
        usleep(1_500_000)
        let left = statusJSON()["secondsUntilAutoLock"] as? Int
        XCTAssertNotNil(left)
        XCTAssertLessThanOrEqual(left ?? 99, 2, "1.5 s after unlock --timeout 3, status reports \(left ?? -1) s left")
        usleep(1_000_000)
        _ = statusJSON()
        usleep(1_000_000)
        // 3.5 s after the last real use: locked, whatever status did meanwhile.
        expect(36, "find", "-s", "wu", "-w")
    }

    func testTimeoutNoneNeverExpires() {
        Self.sleepUntilFraction(0.2)
        unlock(timeout: "none")
        XCTAssertTrue(statusJSON()["secondsUntilAutoLock"] is NSNull, "no auto-lock: null")
        usleep(1_200_000)
        XCTAssertEqual(secret("-s", "wu"), Array("wu-secret".utf8))
        XCTAssertEqual(statusJSON()["whenUnlocked"] as? String, "unlocked")
    }

    func testSettingsTimeoutIsTheDefaultOfALaterUnlock() throws {
        // Stored without the password (the keychain is locked, stdin is /dev/null).
        ok("settings", "--timeout", "7")
        XCTAssertEqual(ok("settings").out, "timeout: 7\n")
        XCTAssertEqual(try ok("--json", "settings").jsonObject()["timeout"] as? Int, 7)
        XCTAssertEqual(statusJSON()["timeout"] as? Int, 7)
        // unlock without --timeout uses it.
        unlock()
        var status = statusJSON()
        XCTAssertEqual(status["whenUnlocked"] as? String, "unlocked")
        let left = status["secondsUntilAutoLock"] as? Int ?? -1
        XCTAssertTrue((6...7).contains(left), "unlock after settings --timeout 7: \(status)")
        // --timeout overrides it for that unlock only.
        unlock(timeout: "100")
        XCTAssertTrue((99...100).contains(statusJSON()["secondsUntilAutoLock"] as? Int ?? -1))
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
        Self.sleepUntilFraction(0.2)
        unlock()
        XCTAssertTrue((0...1).contains(statusJSON()["secondsUntilAutoLock"] as? Int ?? -1))
        usleep(2_100_000)
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
}
