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
/// What the binary shows: attempts of processes started at once take turns,
/// a killed one holds nothing, a password that can't come is not waited
/// for. The counter and the delays themselves are EndToEndPasswordDelayTests,
/// in-process on a clock the test sets.
final class EndToEndPasswordBackoffTests: EndToEndCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
        add("-s", "svc", secret: "value")
        ok("lock", "--all")
    }

    // MARK: - Issue 44, point 10: attempts take turns

    /// Five failures recorded in-process, the last `secondsAgo` before now
    /// (on a clock set back: the binary has no switch for its time).
    private func failFiveTimes(secondsAgo: Double) throws {
        let then = Clock.milliseconds() - Int64(secondsAgo * 1000)
        let environment = Environment(sandbox.environment, time: TimeSource(milliseconds: { then }, sleep: { _ in }))
        for n in 1...5 {
            let keychain = try Keychain.open(at: try environment.keychainPath(nil), environment: environment)
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
