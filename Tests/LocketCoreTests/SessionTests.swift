import Foundation
import LocketCore
import LocketSupport
import LocketTestSupport
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

    private func read(_ account: String, from keychain: TemporaryKeychain, time: TimeSource? = nil) throws -> String? {
        try keychain.open(time: time).search(query(.genericPassword, [.account: account]), returnData: true)[0].secretString
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
        XCTAssertTrue(try a.open().session.isUnlocked)
        XCTAssertFalse(try b.open().session.isUnlocked)
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
        XCTAssertKeychainError(.authFailed, try b.open().session.unlock(password: secret(a.password!), timeout: nil))
        XCTAssertFalse(try b.open().session.isUnlocked)
    }

    func checkUnlockIsSeenByLaterOpensUntilLock() throws {
        let (a, _) = try pair()
        try add("alice", to: a)
        try a.lock(all: true)
        let first = try a.open()
        XCTAssertFalse(first.session.isUnlocked)
        try first.session.unlock(password: secret(a.password!), timeout: 300)
        XCTAssertTrue(try a.open().session.isUnlocked)
        XCTAssertEqual(try read("alice", from: a), "alice")
        try a.open().session.lock(all: false)
        XCTAssertFalse(try a.open().session.isUnlocked)
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
        XCTAssertFalse(try a.open().session.isUnlocked)
    }

    func checkANewKeychainAtTheSamePathGetsNoneOfTheOldSession() throws {
        // A keychain made at the path of an unlocked one has a new identity,
        // so the old (still live) session never opens it.
        let (a, _) = try pair()
        try add("alice", to: a)
        let oldIdentity = try a.open().identity
        XCTAssertTrue(try a.open().session.isUnlocked)
        let aside = a.directory + "/old.keychain"
        for suffix in ["", "-wal", "-shm"] { rename(a.path + suffix, aside + suffix) }
        // The old session is live until the end; lock it through the moved file.
        defer { try? Keychain.open(at: aside, environment: a.environment).session.lock(all: true) }

        try Keychain.create(at: a.path, password: secret("another password"), kdf: .weakForTests, environment: a.environment)
        let fresh = try a.open()
        XCTAssertNotEqual(fresh.identity, oldIdentity)
        fresh.session.lock(all: true)
        XCTAssertFalse(try a.open().session.isUnlocked)
        XCTAssertTrue(try Keychain.open(at: aside, environment: a.environment).session.isUnlocked)
        XCTAssertKeychainError(.authFailed, try a.open().session.unlock(password: secret(a.password!), timeout: nil))
    }

    // MARK: - Auto-lock

    /// In the kernel keyring the kernel's timer expires the keys: the test
    /// waits for it. In the directory the engine judges the file's age on the
    /// environment's clock: the test moves the clock on instead (issue 38).
    func checkInactivityTimeoutLocksTheWhenUnlockedTierOnly() throws {
        let (a, _) = try pair()
        let clock = backend == "dir" ? VirtualClock() : nil
        try add("alice", to: a)
        try a.open().add(genp("svc", "ck", accessible: .afterFirstUnlock), data: secret("ck"))
        try a.unlock(timeout: 2, time: clock?.source)
        XCTAssertTrue(try a.open(time: clock?.source).session.isUnlocked)
        if let clock { clock.advance(seconds: 2.2) } else { usleep(2_200_000) }
        XCTAssertFalse(try a.open(time: clock?.source).session.isUnlocked, "the when-unlocked keys expire after the timeout")
        XCTAssertKeychainError(.interactionNotAllowed, try read("alice", from: a, time: clock?.source))
        XCTAssertEqual(try read("ck", from: a, time: clock?.source), "ck", "after-first-unlock keys have no inactivity timeout")
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
