import Foundation
@testable import LocketCore
import LocketSupport
import LocketTestSupport
import XCTest

/// Issue 44, point 10: wrong passwords started at once take turns. After
/// five failures, six attempts begun together were all checked within a
/// second or two, each having read the count at open; now each reads the
/// count and waits under the keychain's password turn, so they wait 1, 2,
/// 4, 8, 16 and 30 s one after the other (61 s in all). On a clock the test
/// sets (`Environment.time`), so it waits for none of it.
final class PasswordTurnTests: KeychainTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try temporary.lock(all: true)
    }

    /// A fresh object, as another process would open it, on the test's clock.
    private func opened() throws -> Keychain {
        try temporary.open(time: clock.source)
    }

    func testAttemptsStartedAtOnceTakeTurnsAndEachWaitsLonger() throws {
        for n in 1...5 { XCTAssertKeychainError(.authFailed, try opened().session.unlock(password: secret("wrong \(n)"), timeout: nil)) }
        XCTAssertEqual(clock.slept, 0, "the first five failures wait for nothing")
        // All six opened first: each read a count of five at open, as six processes started at once do.
        nonisolated(unsafe) let attempts = try (0..<6).map { _ in try opened() }
        let waits = Recorder<KeychainSession.PasswordWait>()
        for keychain in attempts { keychain.session.passwordWaitObserver = { waits.add($0) } }
        let outcomes = Recorder<KeychainError.Code>()
        DispatchQueue.concurrentPerform(iterations: attempts.count) { k in
            do {
                try attempts[k].session.unlock(password: secret("wrong again \(k)"), timeout: nil)
                outcomes.add(.param)
            } catch let error as KeychainError {
                outcomes.add(error.code)
            } catch {
                outcomes.add(.io)
            }
        }
        XCTAssertEqual(outcomes.all, Array(repeating: .authFailed, count: 6))
        XCTAssertEqual(try opened().session.failedAttempts, 11, "every attempt counted")
        let delays = waits.all.compactMap { wait -> Int? in
            if case .delay(_, let milliseconds) = wait { return milliseconds }
            return nil
        }
        // Decided one after the other from the last verdict: never two attempts on the same count.
        XCTAssertEqual(delays, [1_000, 2_000, 4_000, 8_000, 16_000, 30_000], "\(waits.all)")
        XCTAssertEqual(waits.all.compactMap { wait -> Int? in
            if case .delay(let failures, _) = wait { return failures }
            return nil
        }, [5, 6, 7, 8, 9, 10])
        XCTAssertEqual(clock.slept, 61_000, "six attempts take at least 61 s between them")
    }

    /// A right password queued behind wrong ones waits its turn and the
    /// delay the last of them earned, then unlocks and clears the count.
    func testTheRightPasswordWaitsItsTurnAndResetsTheCount() throws {
        for n in 1...6 { XCTAssertKeychainError(.authFailed, try opened().session.unlock(password: secret("wrong \(n)"), timeout: nil)) }
        let before = clock.slept
        let keychain = try opened()
        try keychain.session.unlock(password: secret(temporary.password!), timeout: nil)
        XCTAssertEqual(clock.slept - before, 2_000, "six failures: 2 s from the last")
        XCTAssertEqual(try opened().session.failedAttempts, 0)
        XCTAssertTrue(try temporary.open().session.isUnlocked)
    }

    /// The turn is a lock file beside the keychain, private, made by the
    /// first password check; a command that checks no password never makes it.
    func testTheTurnIsAPrivateFileBesideTheKeychainThatOnlyAPasswordCheckMakes() throws {
        let lockFile = temporary.path + "-attempts"
        _ = try? temporary.open().search(Query(itemClass: .genericPassword), limit: .all)
        _ = try temporary.open().session.status()
        XCTAssertFalse(FileManager.default.fileExists(atPath: lockFile), "a read made the password turn's file")
        XCTAssertKeychainError(.authFailed, try opened().session.unlock(password: secret("wrong"), timeout: nil))
        var st = stat()
        XCTAssertEqual(lstat(lockFile, &st), 0)
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFREG)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        XCTAssertEqual(st.st_size, 0, "nothing is written in it")
        // Something else under its name is refused, naming it, before any password is hashed.
        unlink(lockFile)
        XCTAssertEqual(mkfifo(lockFile, 0o600), 0)
        XCTAssertKeychainError(.io, try opened().session.unlock(password: secret(temporary.password!), timeout: nil))
        XCTAssertEqual(try opened().session.failedAttempts, 1, "the refused attempt was not counted")
    }
}

/// Values added from several threads, in the order they came.
final class Recorder<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Value] = []

    func add(_ value: Value) { lock.withLock { values.append(value) } }
    var all: [Value] { lock.withLock { values } }
}
