import Foundation
import LocketCore
import XCTest

/// SPEC §2/§5: unlocked keys live in a session keyed by the keychain's
/// identity, in the kernel keyring or a private directory; two keychains never
/// share keys. Every test locks everything it unlocked. The checks run once per
/// backend (XCTest on Linux does not discover inherited test methods, hence
/// the explicit forwarding in each subclass).
class SessionTestCase: XCTestCase {
    /// The session backend under test.
    var backend: String { "dir" }
    var madeKeychains: [TemporaryKeychain] = []

    override func tearDown() {
        // Keyring entries outlive the process: lock --all every keychain made here.
        for keychain in madeKeychains.reversed() { keychain.remove(keepDirectory: keychain !== madeKeychains.first) }
        madeKeychains = []
    }

    private func pair() throws -> (TemporaryKeychain, TemporaryKeychain) {
        let a = try TemporaryKeychain(password: "password A", session: backend, name: "a")
        madeKeychains.append(a)
        let b = try TemporaryKeychain(password: "password B", session: backend, name: "b", sharing: a)
        madeKeychains.append(b)
        return (a, b)
    }

    private func add(_ account: String, to keychain: TemporaryKeychain) throws {
        try keychain.open().add(genp("svc", account), data: secret(account))
    }

    private func read(_ account: String, from keychain: TemporaryKeychain) throws -> String? {
        try keychain.open().search(query(.genericPassword, [.account: account]), returnData: true)[0].secretString
    }

    func checkTwoKeychainsHaveDifferentIdentities() throws {
        let (a, b) = try pair()
        XCTAssertNotEqual(try a.open().identity, try b.open().identity)
    }

    func checkUnlockingOneKeychainDoesNotUnlockAnother() throws {
        let (a, b) = try pair()
        try add("alice", to: a)
        try add("bob", to: b)
        try a.lock(all: true)
        try b.lock(all: true)

        try a.unlock()
        XCTAssertTrue(try a.open().isUnlocked)
        XCTAssertFalse(try b.open().isUnlocked)
        XCTAssertEqual(try read("alice", from: a), "alice")
        XCTAssertKeychainError(.interactionNotAllowed, try read("bob", from: b))
    }

    func checkLockingOneKeychainDoesNotLockAnother() throws {
        let (a, b) = try pair()
        try add("alice", to: a)
        try add("bob", to: b)
        try a.lock(all: true)
        XCTAssertKeychainError(.interactionNotAllowed, try read("alice", from: a))
        XCTAssertEqual(try read("bob", from: b), "bob")
    }

    func checkAPasswordOfOneKeychainDoesNotUnlockAnother() throws {
        let (a, b) = try pair()
        try b.lock(all: true)
        XCTAssertKeychainError(.authFailed, try b.open().unlock(password: secret(a.password!), timeout: nil))
        XCTAssertFalse(try b.open().isUnlocked)
    }

    func checkUnlockIsSeenByLaterOpensUntilLock() throws {
        let (a, _) = try pair()
        try add("alice", to: a)
        try a.lock(all: true)
        let first = try a.open()
        XCTAssertFalse(first.isUnlocked)
        try first.unlock(password: secret(a.password!), timeout: 300)
        XCTAssertTrue(try a.open().isUnlocked)
        XCTAssertEqual(try read("alice", from: a), "alice")
        try a.open().lock(all: false)
        XCTAssertFalse(try a.open().isUnlocked)
        XCTAssertKeychainError(.interactionNotAllowed, try read("alice", from: a))
    }

    func checkLockAllForgetsAfterFirstUnlockKeysToo() throws {
        let (a, _) = try pair()
        try a.open().add(genp("svc", "ck", accessible: .afterFirstUnlock), data: secret("ck"))
        try a.lock(all: false)
        XCTAssertEqual(try read("ck", from: a), "ck")
        try a.lock(all: true)
        XCTAssertKeychainError(.interactionNotAllowed, try read("ck", from: a))
    }

    func checkLockOfALockedKeychainIsHarmless() throws {
        let (a, _) = try pair()
        try a.lock(all: true)
        try a.lock(all: true)
        try a.lock(all: false)
        XCTAssertFalse(try a.open().isUnlocked)
    }

    func checkANewKeychainAtTheSamePathGetsNoneOfTheOldSession() throws {
        // A keychain made at the path of an unlocked one has a new identity,
        // so the old (still live) session never opens it.
        let (a, _) = try pair()
        try add("alice", to: a)
        let oldIdentity = try a.open().identity
        XCTAssertTrue(try a.open().isUnlocked)
        let aside = a.directory + "/old.keychain"
        for suffix in ["", "-wal", "-shm"] { rename(a.path + suffix, aside + suffix) }
        // The old session is live until the end; lock it through the moved file.
        defer { try? Keychain.open(at: aside, environment: a.environment).lock(all: true) }

        try Keychain.create(at: a.path, password: secret("another password"), kdf: .weakForTests, environment: a.environment)
        let fresh = try a.open()
        XCTAssertNotEqual(fresh.identity, oldIdentity)
        fresh.lock(all: true)
        XCTAssertFalse(try a.open().isUnlocked)
        XCTAssertTrue(try Keychain.open(at: aside, environment: a.environment).isUnlocked)
        XCTAssertKeychainError(.authFailed, try a.open().unlock(password: secret(a.password!), timeout: nil))
    }

    // MARK: - Auto-lock

    func checkInactivityTimeoutLocksTheWhenUnlockedTierOnly() throws {
        let (a, _) = try pair()
        try add("alice", to: a)
        try a.open().add(genp("svc", "ck", accessible: .afterFirstUnlock), data: secret("ck"))
        try a.unlock(timeout: 2)
        XCTAssertTrue(try a.open().isUnlocked)
        usleep(2_200_000)
        XCTAssertFalse(try a.open().isUnlocked, "the when-unlocked keys expire after the timeout")
        XCTAssertKeychainError(.interactionNotAllowed, try read("alice", from: a))
        XCTAssertEqual(try read("ck", from: a), "ck", "after-first-unlock keys have no inactivity timeout")
    }

    // MARK: - Where the session lives

    /// Session files of `keychain` in the session directory.
    func sessionFiles(_ keychain: TemporaryKeychain) throws -> [String] {
        let identity = try keychain.open().identity
        let files = (try? FileManager.default.contentsOfDirectory(atPath: keychain.directory + "/run/locket")) ?? []
        return files.filter { $0.hasPrefix(identity) }.sorted()
    }

    /// Keyring entries of `keychain` that this user can see.
    func keyringEntries(_ keychain: TemporaryKeychain) throws -> [String] {
        let identity = try keychain.open().identity
        let keys = (try? String(contentsOfFile: "/proc/keys", encoding: .utf8)) ?? ""
        // Fields: serial, flags, usage, timeout, ... Invalidated (i), revoked (R)
        // and dead (D) keys, or expired ones, linger until the kernel's GC runs.
        return keys.split(separator: "\n").filter { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 3, line.contains("locket:\(identity):") else { return false }
            return !fields[1].contains(where: { "iRD".contains($0) }) && fields[3] != "expd"
        }.map(String.init)
    }

    func made(_ password: String?) throws -> TemporaryKeychain {
        let keychain = try TemporaryKeychain(password: password, session: backend, name: "one")
        madeKeychains.append(keychain)
        return keychain
    }
}

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
        XCTAssertTrue(try keychain.open().isUnlocked)
        var st = stat()
        XCTAssertEqual(stat(file, &st), 0)
        XCTAssertGreaterThan(st.st_mtim.tv_sec, time(nil) - 10, "the use made the session's last use now")
        idle(20)
        // 40 s after unlock, 20 s after the last use.
        XCTAssertTrue(try keychain.open().isUnlocked, "the timeout counts inactivity, not time since unlock")
    }

    func testTimeoutNoneNeverExpires() throws {
        let keychain = try made("pw")
        try keychain.unlock(timeout: 0)
        let identity = try keychain.open().identity
        // Age the session file by an hour: a session without a timeout does not care.
        var times = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        XCTAssertEqual(utimensat(AT_FDCWD, keychain.directory + "/run/locket/\(identity).wu", &times, 0), 0)
        XCTAssertTrue(try keychain.open().isUnlocked)
    }

    func testAnAgedSessionFileIsExpired() throws {
        let keychain = try made("pw")
        try keychain.unlock(timeout: 300)
        let identity = try keychain.open().identity
        var times = [timespec(tv_sec: time(nil) - 301, tv_nsec: 0), timespec(tv_sec: time(nil) - 301, tv_nsec: 0)]
        XCTAssertEqual(utimensat(AT_FDCWD, keychain.directory + "/run/locket/\(identity).wu", &times, 0), 0)
        XCTAssertFalse(try keychain.open().isUnlocked)
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
        XCTAssertFalse(try keychain.open().isUnlocked, "a directory others can read holds no session")
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
        XCTAssertTrue(try keychain.open().isUnlocked, "the session itself was left alone")
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

/// `LOCKET_SESSION=keyring`: the kernel user keyring.
final class KeyringSessionTests: SessionTestCase {
    override var backend: String { "keyring" }

    func testSessionIsInTheKeyringAndLockAllRemovesIt() throws {
        let keychain = try made("pw")
        XCTAssertEqual(try keyringEntries(keychain).count, 2, "one key per tier")
        XCTAssertEqual(try sessionFiles(keychain), [], "a forced keyring session writes no file")
        try keychain.lock(all: false)
        XCTAssertEqual(try keyringEntries(keychain).count, 1)
        try keychain.lock(all: true)
        XCTAssertEqual(try keyringEntries(keychain), [])
    }

    override func setUpWithError() throws {
        // The keyring may be refused in some containers; say so rather than fail.
        do {
            let probe = try TemporaryKeychain(password: "probe", session: "keyring", name: "probe")
            probe.remove()
        } catch let error as KeychainError where error.code == .io {
            throw XCTSkip("the kernel keyring is not available here: \(error)")
        }
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
