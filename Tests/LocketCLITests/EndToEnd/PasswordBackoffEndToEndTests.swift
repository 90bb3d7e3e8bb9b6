import Foundation
@testable import LocketCore
import LocketSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

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
        // Counting starts over: four more failures still do not wait (no wait announced: the
        // announcement and the engine's sleep come from the same delay).
        for _ in 1...4 { XCTAssertEqual(wrongUnlock().errLines.count, 1, "no wait before five failures") }
        XCTAssertEqual(failedAttempts(), 4)
        XCTAssertEqual(ok("status").fields["failed attempts"], "4")
    }

    func testAfterFiveFailuresEachAttemptWaitsLongerAndSaysSo() throws {
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
        // The seventh attempt, through passwd (the same wait applies): 2 s, and no more: the
        // sleeps it asked the kernel for add up to at most the announced 2 s (counted with
        // strace, so a loaded machine's slowness is not mistaken for a longer wait).
        let (seventh, slept) = try sleeps(["passwd"], input: .text("wrong password\nnew\n"))
        XCTAssertEqual(seventh.status, 51, seventh.summary)
        XCTAssertTrue(seventh.err.hasPrefix("locket: warning: ") && seventh.err.contains("waiting 2 s"), seventh.summary)
        XCTAssertGreaterThanOrEqual(seventh.duration, 1.8, seventh.summary)
        if let slept { XCTAssertLessThanOrEqual(slept, 2.0, "asked to sleep \(slept) s in all: \(seventh.summary)") }
        XCTAssertEqual(failedAttempts(), 7)
        // status reports it without waiting or a password: it asks for no sleep at all.
        let (status, statusSlept) = try sleeps(["status"])
        XCTAssertEqual(status.status, 0, status.summary)
        if let statusSlept { XCTAssertEqual(statusSlept, 0, "status slept") }
    }

    /// The fifth failure just before a second boundary, the sixth attempt just
    /// after it: well within a second of the last failure, it must still wait.
    /// The premise (both land where aimed) is checked, and the round played
    /// again on a fresh keychain when a loaded machine missed it.
    func testTheWaitIsCountedFromTheLastFailureNotFromItsWholeSecond() {
        var rounds = 0
        for round in 1...5 {
            let keychain = sandbox.root + "/round-\(round).keychain"
            initKeychain(keychain)
            ok("-k", keychain, "lock", "--all")
            func wrong() -> RunResult { expect(51, "-k", keychain, "unlock", "--password-stdin", input: .text("wrong password\n")) }
            for _ in 1...4 { _ = wrong() }
            Self.sleepUntilFraction(0.93)
            let boundary = floor(Self.wallClock()) + 1
            _ = wrong()
            let fifthEnded = Self.wallClock()
            if fifthEnded < boundary + 0.02 { usleep(UInt32((boundary + 0.02 - fifthEnded) * 1_000_000)) }
            let sixthStarted = Self.wallClock()
            let sixth = wrong()
            // Premise: the fifth failed before the boundary, the sixth started after it and within half a second.
            guard fifthEnded < boundary, sixthStarted - fifthEnded < 0.5 else { continue }
            rounds += 1
            XCTAssertTrue(sixth.err.contains("waiting"), "a 6th attempt \(String(format: "%.2f", sixthStarted - fifthEnded)) s after the 5th failure did not wait: \(sixth.summary)")
            XCTAssertGreaterThanOrEqual(sixth.duration, 0.5, sixth.summary)
            break
        }
        XCTAssertEqual(rounds, 1, "in five rounds the machine never placed the attempts around a second boundary")
    }

    // MARK: - Issue 44, point 10: attempts take turns

    /// Five failures recorded in-process, the last `secondsAgo` before now
    /// (on a clock set back: the binary has no switch for its time).
    private func failFiveTimes(secondsAgo: Double) throws {
        let environment = Environment(sandbox.environment)
        let then = Clock.milliseconds() - Int64(secondsAgo * 1000)
        for n in 1...5 {
            let keychain = try Keychain.open(at: try environment.keychainPath(nil), environment: environment)
            keychain.engine.time = TimeSource(milliseconds: { then }, sleep: { _ in })
            XCTAssertThrowsError(try keychain.session.unlock(password: SecureBytes(copying: Array("wrong \(n)".utf8)), timeout: nil))
        }
    }

    /// Wrong passwords started at once used to be checked side by side, each
    /// having read the count at open. Now the second waits for the first's
    /// verdict, then the 2 s the sixth failure earned; and a process killed
    /// while it holds its turn holds nothing: the next attempt goes on.
    func testAttemptsStartedAtOnceTakeTurnsAndAKilledOneHoldsNothing() throws {
        // A killed attempt: five failures half a second ago, so a sixth waits the other half, holding its turn.
        try failFiveTimes(secondsAgo: 0.5)
        let wrongFile = sandbox.root + "/wrong-password"
        writeFile(wrongFile, "wrong password\n", mode: 0o600)
        let killed = try BackgroundProcess(binary, ["unlock", "--password-file", wrongFile], environment: sandbox.environment)
        XCTAssertTrue(killed.waitUntil(timeout: 10) { killed.err.contains("waiting 1 s") }, "\(killed.err)")
        kill(killed.pid, SIGKILL)
        XCTAssertTrue(killed.wait(timeout: 10))
        let right = locket(["unlock", "--password-stdin"], input: .text(Self.password + "\n"))
        XCTAssertEqual(right.status, 0, right.summary)
        XCTAssertLessThan(right.duration, 2.5, "the killed attempt's turn held the next one: \(right.summary)")
        XCTAssertEqual(failedAttempts(), 0, "the killed attempt was never counted; the success reset the rest")
        ok("lock", "--all")

        // Two at once, while the sixth attempt still has half a second to wait: both open
        // with a count of five. Before, both waited it out side by side and were checked
        // together; now the second waits for the first's verdict, then the 2 s the sixth
        // failure earned.
        try failFiveTimes(secondsAgo: 0.5)
        let binary = self.binary!
        let environment = sandbox.environment
        nonisolated(unsafe) var results: [RunResult?] = [nil, nil]
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: 2) { k in
            let result = Spawn.run(binary, ["unlock", "--password-stdin"], environment: environment,
                                   input: .text("wrong password \(k)\n"), timeout: Self.timeout)
            lock.withLock { results[k] = result }
        }
        let both = results.compactMap { $0 }
        XCTAssertEqual(both.map(\.status), [51, 51], both.map(\.summary).joined(separator: "\n"))
        XCTAssertEqual(failedAttempts(), 7)
        let (first, second) = both[0].duration < both[1].duration ? (both[0], both[1]) : (both[1], both[0])
        XCTAssertTrue(first.err.contains("5 wrong passwords in a row; waiting 1 s"), first.summary)
        XCTAssertTrue(second.err.contains("6 wrong passwords in a row; waiting 2 s"), second.summary)
        XCTAssertGreaterThanOrEqual(second.duration - first.duration, 1.8,
                                    "the second attempt was checked beside the first: \(first.summary)\n\(second.summary)")
    }

    // MARK: - Point 8: no terminal, nothing on stdin

    func testNoPasswordToReadFailsAtOnceAsInteractionNotAllowed() {
        for args in [["unlock"], ["unlock", "--password-stdin"], ["passwd"]] {
            let result = locket(args, input: .devNull)
            XCTAssertLessThan(result.duration, 8, "\(args): must not wait the 10 s a password may take to come: \(result.summary)")
            XCTAssertEqual(result.status, 36, "\(args) with no terminal and stdin at end of file: \(result.summary)")
            XCTAssertTrue(result.err.contains("errSecInteractionNotAllowed"), result.summary)
            XCTAssertTrue(result.err.contains("--password-stdin"), "the hint names --password-stdin: \(result.summary)")
        }
        XCTAssertEqual(failedAttempts(), 0, "a password that was never read is not a failed attempt")
        // Reading a locked item in a script fails at once with the hint to unlock.
        let find = expect(36, "find", "-s", "svc", "-w")
        XCTAssertTrue(find.err.contains("locket unlock"), find.summary)
        XCTAssertLessThan(find.duration, 8, "the 10 s a password may take to come")
    }
}
