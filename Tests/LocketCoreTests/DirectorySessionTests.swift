import Foundation
import LocketCore
import XCTest

/// `LOCKET_SESSION=dir`: a private directory under `$XDG_RUNTIME_DIR`.
final class DirectorySessionTests: SessionTestCase {
    override var backend: String { "dir" }

    func testSessionIsAPrivateFilePerTierAndLockAllRemovesIt() throws {
        let keychain = try made("pw")
        let identity = try keychain.open().identity
        XCTAssertEqual(try sessionFiles(keychain), ["\(identity).afu", "\(identity).wu"])
        XCTAssertEqual(try keyringEntries(keychain), [], "a forced directory session never touches the keyring")
        var st = stat()
        XCTAssertEqual(stat(keychain.directory + "/run/locket", &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o700)
        for file in try sessionFiles(keychain) {
            XCTAssertEqual(stat(keychain.directory + "/run/locket/" + file, &st), 0)
            XCTAssertEqual(st.st_mode & 0o077, 0, file)
        }
        try keychain.lock(all: false)
        XCTAssertEqual(try sessionFiles(keychain), ["\(identity).afu"])
        try keychain.lock(all: true)
        XCTAssertEqual(try sessionFiles(keychain), [])
    }

    /// The session file's modification time is its last use: set back rather
    /// than slept through, so a loaded machine can't stretch the idle time.
    func testUseWithinTheTimeoutExtendsTheSession() throws {
        let keychain = try made("pw")
        try keychain.unlock(timeout: 30)
        let file = keychain.directory + "/run/locket/\(try keychain.open().identity).wu"
        func idle(_ seconds: Int) {
            var times = [timespec(tv_sec: time(nil) - seconds, tv_nsec: 0), timespec(tv_sec: time(nil) - seconds, tv_nsec: 0)]
            XCTAssertEqual(utimensat(AT_FDCWD, file, &times, 0), 0)
        }
        idle(20)
        XCTAssertTrue(try keychain.open().session.isUnlocked)
        var st = stat()
        XCTAssertEqual(stat(file, &st), 0)
        XCTAssertGreaterThan(st.st_mtim.tv_sec, time(nil) - 10, "the use made the session's last use now")
        idle(20)
        // 40 s after unlock, 20 s after the last use.
        XCTAssertTrue(try keychain.open().session.isUnlocked, "the timeout counts inactivity, not time since unlock")
    }

    func testTimeoutNoneNeverExpires() throws {
        let keychain = try made("pw")
        try keychain.unlock(timeout: 0)
        let identity = try keychain.open().identity
        // Age the session file by an hour: a session without a timeout does not care.
        var times = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        XCTAssertEqual(utimensat(AT_FDCWD, keychain.directory + "/run/locket/\(identity).wu", &times, 0), 0)
        XCTAssertTrue(try keychain.open().session.isUnlocked)
    }

    func testAnAgedSessionFileIsExpired() throws {
        let keychain = try made("pw")
        try keychain.unlock(timeout: 300)
        let identity = try keychain.open().identity
        var times = [timespec(tv_sec: time(nil) - 301, tv_nsec: 0), timespec(tv_sec: time(nil) - 301, tv_nsec: 0)]
        XCTAssertEqual(utimensat(AT_FDCWD, keychain.directory + "/run/locket/\(identity).wu", &times, 0), 0)
        XCTAssertFalse(try keychain.open().session.isUnlocked)
        XCTAssertEqual(try sessionFiles(keychain), ["\(identity).afu"], "the expired file is removed")
    }

    /// Issue 11 item 2: a session directory that is not private (in /dev/shm
    /// another user can make it first) reads as no session; lock still
    /// works; unlock is refused naming it; nothing in it is read or written.
    func testASessionDirectoryThatIsNotPrivateIsNoSessionAndNeverWritten() throws {
        let keychain = try made("pw")
        let directory = keychain.directory + "/run/locket"
        func snapshot() throws -> [String: Data] {
            var out: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
                out[name] = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
            }
            return out
        }
        let before = try snapshot()
        XCTAssertEqual(before.count, 2)
        XCTAssertEqual(chmod(directory, 0o755), 0)
        XCTAssertFalse(try keychain.open().session.isUnlocked, "a directory others can read holds no session")
        XCTAssertNoThrow(try keychain.lock(all: true))
        do {
            try keychain.unlock()
            XCTFail("unlock wrote its keys into a directory others can read")
        } catch let error as KeychainError {
            XCTAssertEqual(error.code, .io)
            XCTAssertTrue(error.message.contains(directory) && error.message.contains("not private"), error.message)
        }
        XCTAssertEqual(try snapshot(), before, "nothing in it was removed, wiped or replaced")
        XCTAssertEqual(chmod(directory, 0o700), 0)
        XCTAssertTrue(try keychain.open().session.isUnlocked, "the session itself was left alone")
    }

    func testASessionFileOthersCanReadIsRefused() throws {
        let keychain = try made("pw")
        let identity = try keychain.open().identity
        chmod(keychain.directory + "/run/locket/\(identity).wu", 0o644)
        XCTAssertKeychainError(.io, try keychain.open())
    }

    func testTwoKeychainsHaveDifferentIdentities() throws { try checkTwoKeychainsHaveDifferentIdentities() }
    func testUnlockingOneKeychainDoesNotUnlockAnother() throws { try checkUnlockingOneKeychainDoesNotUnlockAnother() }
    func testLockingOneKeychainDoesNotLockAnother() throws { try checkLockingOneKeychainDoesNotLockAnother() }
    func testAPasswordOfOneKeychainDoesNotUnlockAnother() throws { try checkAPasswordOfOneKeychainDoesNotUnlockAnother() }
    func testUnlockIsSeenByLaterOpensUntilLock() throws { try checkUnlockIsSeenByLaterOpensUntilLock() }
    func testLockAllForgetsAfterFirstUnlockKeysToo() throws { try checkLockAllForgetsAfterFirstUnlockKeysToo() }
    func testLockOfALockedKeychainIsHarmless() throws { try checkLockOfALockedKeychainIsHarmless() }
    func testANewKeychainAtTheSamePathGetsNoneOfTheOldSession() throws { try checkANewKeychainAtTheSamePathGetsNoneOfTheOldSession() }
    func testInactivityTimeoutLocksTheWhenUnlockedTierOnly() throws { try checkInactivityTimeoutLocksTheWhenUnlockedTierOnly() }
}
