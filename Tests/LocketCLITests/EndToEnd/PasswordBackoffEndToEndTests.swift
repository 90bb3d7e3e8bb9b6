import Foundation
import XCTest

/// Issue 3, points 7 and 8: wrong passwords fail with errSecAuthFailed, and
/// after five in a row each attempt waits longer, saying so; the counter is
/// kept in the keychain. A password that cannot be read fails at once.
final class EndToEndPasswordBackoffTests: EndToEndCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        add("-s", "svc", secret: "value")
        ok("lock", "--all")
    }

    private func failedAttempts(file: StaticString = #filePath, line: UInt = #line) -> Int {
        statusJSON(file: file, line: line)["failedAttempts"] as? Int ?? -1
    }

    /// One wrong `unlock`, quick and silent apart from the error.
    private func wrongUnlock(file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = locket(["unlock", "--password-stdin"], input: .text("wrong password\n"), file: file, line: line)
        XCTAssertEqual(result.status, 51, result.summary, file: file, line: line)
        // After the warning about a wait, if any, the error line.
        let last = result.errLines.last ?? ""
        XCTAssertTrue(last.hasPrefix("locket: error: ") && last.hasSuffix("(errSecAuthFailed -25293)"), result.summary, file: file, line: line)
        return result
    }

    func testTheCounterPersistsAcrossProcessesAndASuccessResetsIt() {
        XCTAssertEqual(failedAttempts(), 0)
        for n in 1...3 {
            let result = wrongUnlock()
            XCTAssertEqual(result.errLines.count, 1, "no wait before five failures: \(result.summary)")
            XCTAssertEqual(failedAttempts(), n, "each process adds one")
        }
        // A wrong old password in passwd counts too.
        expect(51, "passwd", input: .text("wrong password\nnew\n"))
        XCTAssertEqual(failedAttempts(), 4)
        XCTAssertEqual(statusJSON()["whenUnlocked"] as? String, "locked")
        unlock()
        XCTAssertEqual(failedAttempts(), 0, "a success resets the counter")
        XCTAssertEqual(ok("status").fields["failed attempts"], nil)
        // Counting starts over: four more failures still do not wait.
        for _ in 1...4 { XCTAssertLessThan(wrongUnlock().duration, 0.9) }
        XCTAssertEqual(failedAttempts(), 4)
        XCTAssertEqual(ok("status").fields["failed attempts"], "4")
    }

    func testAfterFiveFailuresEachAttemptWaitsLongerAndSaysSo() {
        for _ in 1...4 { _ = wrongUnlock() }
        // The fifth early in a second, so the sixth follows it within the same second.
        Self.sleepUntilFraction(0.1)
        let fifth = wrongUnlock()
        XCTAssertEqual(fifth.errLines.count, 1, "the fifth failure itself does not wait: \(fifth.summary)")
        XCTAssertEqual(failedAttempts(), 5)
        let sixth = wrongUnlock()
        XCTAssertTrue(sixth.errLines.first?.hasPrefix("locket: warning: ") == true, sixth.summary)
        XCTAssertTrue(sixth.err.contains("waiting 1 s"), "the wait is reported: \(sixth.summary)")
        XCTAssertGreaterThanOrEqual(sixth.duration, 0.8, sixth.summary)
        // The seventh attempt, through passwd (the same wait applies): 2 s.
        let seventh = expect(51, "passwd", input: .text("wrong password\nnew\n"))
        XCTAssertTrue(seventh.err.hasPrefix("locket: warning: ") && seventh.err.contains("waiting 2 s"), seventh.summary)
        XCTAssertGreaterThanOrEqual(seventh.duration, 1.8, seventh.summary)
        XCTAssertLessThan(seventh.duration, 3.5, seventh.summary)
        XCTAssertEqual(failedAttempts(), 7)
        // status reports it without waiting or a password.
        XCTAssertLessThan(locket("status").duration, 0.9)
    }

    func testTheWaitIsCountedFromTheLastFailureNotFromItsWholeSecond() {
        for _ in 1...4 { _ = wrongUnlock() }
        // The fifth failure just before a second boundary, the sixth attempt just after it:
        // about 0.1 s after the last failure, it must still wait out (most of) 1 s.
        Self.sleepUntilFraction(0.93)
        let fifthStart = Self.wallClock()
        _ = wrongUnlock()
        let boundary = floor(fifthStart) + 1
        if Self.wallClock() < boundary + 0.02 { usleep(UInt32((boundary + 0.02 - Self.wallClock()) * 1_000_000)) }
        let sixth = wrongUnlock()
        XCTAssertTrue(sixth.err.contains("waiting"), "a 6th attempt \(String(format: "%.2f", sixth.duration)) s long, ~0.1 s after the 5th failure, did not wait: \(sixth.summary)")
        XCTAssertGreaterThanOrEqual(sixth.duration, 0.5, sixth.summary)
    }

    // MARK: - Point 8: no terminal, nothing on stdin

    func testNoPasswordToReadFailsAtOnceAsInteractionNotAllowed() {
        for args in [["unlock"], ["unlock", "--password-stdin"], ["passwd"]] {
            let result = locket(args, input: .devNull)
            XCTAssertLessThan(result.duration, 2, "\(args): must not wait: \(result.summary)")
            XCTAssertEqual(result.status, 36, "\(args) with no terminal and stdin at end of file: \(result.summary)")
            XCTAssertTrue(result.err.contains("errSecInteractionNotAllowed"), result.summary)
            XCTAssertTrue(result.err.contains("--password-stdin"), "the hint names --password-stdin: \(result.summary)")
        }
        XCTAssertEqual(failedAttempts(), 0, "a password that was never read is not a failed attempt")
        // Reading a locked item in a script fails at once with the hint to unlock.
        let find = expect(36, "find", "-s", "svc", "-w")
        XCTAssertTrue(find.err.contains("locket unlock"), find.summary)
        XCTAssertLessThan(find.duration, 2)
    }
}
