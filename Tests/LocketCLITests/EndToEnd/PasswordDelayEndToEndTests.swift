import Foundation
import XCTest

/// Issue 3, points 7 and 8, the counter and the delays: wrong passwords fail
/// with errSecAuthFailed, and after five in a row each attempt waits longer,
/// saying so; the counter is kept in the keychain. In-process, every command
/// a fresh open of the keychain as a process's would be, on a clock the test
/// sets (issue 38): a wait is what the command slept on it, to the
/// millisecond, not a duration a loaded machine stretches, and a second
/// boundary is where the test puts the clock. What needs processes (attempts
/// started at once, a killed one) is EndToEndPasswordBackoffTests.
final class EndToEndPasswordDelayTests: EndToEndCase {
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        clock = VirtualClock()
        initKeychain()
        add("-s", "svc", secret: "value")
        ok("lock", "--all")
    }

    /// Milliseconds `body`'s commands slept on the clock.
    private func slept(_ body: () -> Void) -> Int64 {
        let before = clock!.slept
        body()
        return clock!.slept - before
    }

    func testTheCounterPersistsAcrossProcessesAndASuccessResetsIt() {
        XCTAssertEqual(failedAttempts(), 0)
        for n in 1...3 {
            let result = wrongUnlock()
            XCTAssertEqual(result.errLines.count, 1, "no wait before five failures: \(result.summary)")
            XCTAssertEqual(failedAttempts(), n, "each command (a fresh open, as a process makes) adds one")
        }
        // A wrong old password in passwd counts too.
        expect(51, "passwd", input: .text("wrong password\nnew\n"))
        XCTAssertEqual(failedAttempts(), 4)
        XCTAssertEqual(statusJSON()["whenUnlocked"] as? String, "locked")
        unlock()
        XCTAssertEqual(failedAttempts(), 0, "a success resets the counter")
        XCTAssertEqual(ok("status").fields["failed attempts"], nil)
        // Counting starts over: four more failures still do not wait (no wait announced: the
        // announcement and the engine's sleep come from the same delay).
        for _ in 1...4 { XCTAssertEqual(wrongUnlock().errLines.count, 1, "no wait before five failures") }
        XCTAssertEqual(failedAttempts(), 4)
        XCTAssertEqual(ok("status").fields["failed attempts"], "4")
    }

    func testAfterFiveFailuresEachAttemptWaitsLongerAndSaysSo() throws {
        var fifth: RunResult!
        let firstFive = slept {
            for _ in 1...4 { _ = wrongUnlock() }
            fifth = wrongUnlock()
        }
        XCTAssertEqual(fifth.errLines.count, 1, "the fifth failure itself does not wait: \(fifth.summary)")
        XCTAssertEqual(firstFive, 0, "the first five failures wait for nothing")
        XCTAssertEqual(failedAttempts(), 5)
        var sixth: RunResult!
        // The sixth follows the fifth at once (no time passes on the clock but what is slept).
        let sixthSlept = slept { sixth = wrongUnlock() }
        XCTAssertTrue(sixth.errLines.first?.hasPrefix("locket: warning: ") == true, sixth.summary)
        XCTAssertTrue(sixth.err.contains("waiting 1 s"), "the wait is reported: \(sixth.summary)")
        XCTAssertEqual(sixthSlept, 1000, "the sixth waited 1 s: \(sixth.summary)")
        // The seventh attempt, through passwd (the same wait applies): 2 s, and no more.
        var seventh: RunResult!
        let seventhSlept = slept { seventh = locket(["passwd"], input: .text("wrong password\nnew\n")) }
        XCTAssertEqual(seventh.status, 51, seventh.summary)
        XCTAssertTrue(seventh.err.hasPrefix("locket: warning: ") && seventh.err.contains("waiting 2 s"), seventh.summary)
        XCTAssertEqual(seventhSlept, 2000, "slept \(seventhSlept) ms in all: \(seventh.summary)")
        XCTAssertEqual(failedAttempts(), 7)
        // status reports it without waiting or a password: it sleeps not at all.
        var status: RunResult!
        let statusSlept = slept { status = locket(["status"]) }
        XCTAssertEqual(status.status, 0, status.summary)
        XCTAssertEqual(statusSlept, 0, "status slept")
    }

    /// The fifth failure just before a second boundary, the sixth attempt just
    /// after it: well within a second of the last failure, it must still wait,
    /// for the rest of the second since that failure. The clock is put where
    /// each lands (on the wall clock this took up to five rounds, each waiting
    /// for a second's end).
    func testTheWaitIsCountedFromTheLastFailureNotFromItsWholeSecond() {
        func wrong() -> RunResult { expect(51, "unlock", "--password-stdin", input: .text("wrong password\n")) }
        for _ in 1...4 { _ = wrong() }
        let boundary = floor(clock!.seconds) + 1
        clock!.set(milliseconds: Int64(boundary) * 1000 - 70)
        _ = wrong()
        let fifthEnded = clock!.seconds
        clock!.set(milliseconds: Int64(boundary) * 1000 + 20)
        let sixthStarted = clock!.seconds
        var sixth: RunResult!
        let waited = slept { sixth = wrong() }
        // Premise: the fifth failed before the boundary, the sixth started after it and within half a second.
        XCTAssertLessThan(fifthEnded, boundary)
        XCTAssertLessThan(sixthStarted - fifthEnded, 0.5)
        XCTAssertTrue(sixth.err.contains("waiting"), "a 6th attempt \(String(format: "%.2f", sixthStarted - fifthEnded)) s after the 5th failure did not wait: \(sixth.summary)")
        XCTAssertEqual(waited, 910, "the rest of the second since the 5th failure: \(sixth.summary)")
    }
}

extension EndToEndCase {
    /// The count of wrong passwords in a row, as `status --json` reports it.
    func failedAttempts(file: StaticString = #filePath, line: UInt = #line) -> Int {
        statusJSON(file: file, line: line)["failedAttempts"] as? Int ?? -1
    }

    /// One wrong `unlock`, quick and silent apart from the error.
    func wrongUnlock(file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = locket(["unlock", "--password-stdin"], input: .text("wrong password\n"), file: file, line: line)
        XCTAssertEqual(result.status, 51, result.summary, file: file, line: line)
        // After the warning about a wait, if any, the error line.
        let last = result.errLines.last ?? ""
        XCTAssertTrue(last.hasPrefix("locket: error: ") && last.hasSuffix("(errSecAuthFailed -25293)"), result.summary, file: file, line: line)
        return result
    }
}
