import Foundation
@testable import LocketCore
import LocketSupport
import LocketTestSupport
import XCTest

/// SPEC §5: what each protection class allows after `lock` and `lock --all`,
/// and that a locked item is never reported missing nor deleted by a failed read.
final class LockTests: KeychainTestCase {
    /// Locks (a separate object, as a separate `locket lock` would) and reopens.
    private func relock(all: Bool) throws -> Keychain {
        try temporary.lock(all: all)
        return try temporary.open()
    }

    private func unlockAndReopen() throws -> Keychain {
        try temporary.unlock()
        return try temporary.open()
    }

    // MARK: - when-unlocked

    func testANewKeychainWithAPasswordStartsUnlocked() throws {
        XCTAssertTrue(keychain.hasPassword)
        XCTAssertTrue(keychain.session.isUnlocked)
        XCTAssertNoThrow(try addGenp("svc", "alice"))
    }

    /// The engine keeps the generation mirror it made (and the index and
    /// device keys it was made from) for the next check; a lock drops it
    /// with the keys, and the next unlock's write makes it again.
    func testALockForgetsTheKeptGenerationMirror() throws {
        try addGenp("svc", "alice", secret: "a")
        XCTAssertNotNil(keychain.engine.madeMirror, "a write checked and raised no mirror")
        keychain.session.lock(all: true)
        XCTAssertNil(keychain.engine.madeMirror, "the lock left the mirror and the keys it holds in memory")
        try keychain.session.unlock(password: secret(temporary.password!), timeout: nil)
        try addGenp("svc", "bob", secret: "b")
        XCTAssertNotNil(keychain.engine.madeMirror)
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.account: "alice"]), returnData: true)[0].secretString, "a")
    }

    func testLockedWhenUnlockedItemIsInteractionNotAllowedNeverNotFound() throws {
        try addGenp("svc", "alice", secret: "a")
        let locked = try relock(all: false)
        XCTAssertFalse(locked.session.isUnlocked)
        XCTAssertKeychainError(.interactionNotAllowed, try locked.search(query(.genericPassword, [.account: "alice"])))
        XCTAssertKeychainError(.interactionNotAllowed, try locked.search(query(.genericPassword, [.account: "alice"]), returnData: true))
        XCTAssertKeychainError(.interactionNotAllowed, try locked.search(Query(itemClass: .genericPassword), limit: .all))
        XCTAssertEqual(KeychainError(.interactionNotAllowed).status, -25308)
    }

    func testLockedSearchForAnItemThatDoesNotExistIsNotFound() throws {
        try addGenp("svc", "alice")
        let locked = try relock(all: false)
        XCTAssertKeychainError(.itemNotFound, try locked.search(query(.genericPassword, [.account: "bob"])))
    }

    func testLockedItemAmongAvailableOnesStillFailsTheSearch() throws {
        // A search that would return the available item and silently skip the
        // locked one would report a partial answer as complete.
        try addGenp("svc", "locked", accessible: .whenUnlocked)
        try addGenp("svc", "open", accessible: .afterFirstUnlock)
        let locked = try relock(all: false)
        XCTAssertKeychainError(.interactionNotAllowed, try locked.search(query(.genericPassword, [.service: "svc"]), limit: .all))
        XCTAssertEqual(try locked.search(query(.genericPassword, [.account: "open"])).count, 1)
    }

    /// Several queries in one transaction (exec and inject): each gets what
    /// its own `search` would, a locked item and a missing one included.
    func testABatchSearchGivesEachQueryItsOwnAnswer() throws {
        try addGenp("svc", "locked", secret: "l", accessible: .whenUnlocked)
        try addGenp("svc", "open", secret: "o", accessible: .afterFirstUnlock)
        let locked = try relock(all: false)
        let results = try locked.search([query(.genericPassword, [.account: "open"]), query(.genericPassword, [.account: "locked"]),
                                         query(.genericPassword, [.account: "nobody"]), query(.genericPassword, [.account: "open"])],
                                        returnData: true)
        XCTAssertEqual(results.count, 4)
        for index in [0, 3] {
            XCTAssertEqual(try results[index].get().first?.data?.bytes, Array("o".utf8), "query \(index)")
        }
        XCTAssertKeychainError(.interactionNotAllowed, try results[1].get())
        XCTAssertKeychainError(.itemNotFound, try results[2].get())
        XCTAssertKeychainError(.param, try locked.search([query(.genericPassword, [.account: "open"])], limit: .count(0)))
    }

    func testAddAndUpdateOfALockedClassAreInteractionNotAllowed() throws {
        try addGenp("svc", "alice", secret: "a")
        let locked = try relock(all: false)
        XCTAssertKeychainError(.interactionNotAllowed, try addGenp("svc", "bob", in: locked))
        XCTAssertKeychainError(.interactionNotAllowed,
                               try locked.update(query(.genericPassword, [.account: "alice"]), changes: [.comment: bytes("x")]))
        XCTAssertKeychainError(.interactionNotAllowed,
                               try locked.update(query(.genericPassword, [.account: "alice"]), changes: [:], data: secret("new")))
        XCTAssertKeychainError(.interactionNotAllowed,
                               try locked.add(genp("svc", "alice"), data: secret("new"), updateExisting: true))
        let unlocked = try unlockAndReopen()
        let all = try allGenp(in: unlocked)
        XCTAssertEqual(all.map { $0.string(.account) }, ["alice"])
        XCTAssertEqual(all[0].secretString, "a")
        XCTAssertEqual(all[0].string(.comment), "")
    }

    func testDuplicateIsStillReportedWhileLocked() throws {
        // The primary-key digest works while locked, so add of an existing key is a duplicate or locked, never a second item.
        try addGenp("svc", "alice", accessible: .afterFirstUnlock)
        let locked = try relock(all: false)
        XCTAssertKeychainError(.duplicateItem, try addGenp("svc", "alice", accessible: .afterFirstUnlock, in: locked))
    }

    func testDeleteWorksWhileLocked() throws {
        try addGenp("svc", "alice")
        try addGenp("svc", "bob")
        let locked = try relock(all: true)
        XCTAssertEqual(try locked.delete(query(.genericPassword, [.account: "alice"])), 1)
        XCTAssertKeychainError(.itemNotFound, try locked.delete(query(.genericPassword, [.account: "alice"])))
        let unlocked = try unlockAndReopen()
        XCTAssertEqual(try allGenp(in: unlocked).map { $0.string(.account) }, ["bob"])
    }

    func testAFailedReadNeverDeletesAnything() throws {
        try addGenp("svc", "alice", secret: "a")
        let locked = try relock(all: true)
        for _ in 0..<3 {
            XCTAssertKeychainError(.interactionNotAllowed, try locked.search(Query(itemClass: .genericPassword), limit: .all, returnData: true))
            XCTAssertKeychainError(.interactionNotAllowed, try locked.update(Query(itemClass: .genericPassword), changes: [.comment: bytes("x")]))
        }
        let unlocked = try unlockAndReopen()
        XCTAssertEqual(try allGenp(in: unlocked).map { $0.secretString ?? "" }, ["a"])
    }

    func testUnlockMakesItemsReadableAgain() throws {
        try addGenp("svc", "alice", secret: "a")
        _ = try relock(all: true)
        let unlocked = try unlockAndReopen()
        XCTAssertTrue(unlocked.session.isUnlocked)
        XCTAssertEqual(try unlocked.search(query(.genericPassword, [.account: "alice"]), returnData: true)[0].secretString, "a")
    }

    func testLockThroughAnObjectLocksThatObjectToo() throws {
        // A library caller that locks and then reads through the same object
        // must not still see the forgotten keys.
        try addGenp("svc", "alice", secret: "a")
        keychain.session.lock(all: false)
        XCTAssertFalse(keychain.session.isUnlocked)
        XCTAssertKeychainError(.interactionNotAllowed, try keychain.search(query(.genericPassword, [.account: "alice"]), returnData: true))
    }

    func testUnlockThroughAnObjectUnlocksThatObjectToo() throws {
        try addGenp("svc", "alice", secret: "a")
        let locked = try relock(all: true)
        XCTAssertFalse(locked.session.isUnlocked)
        try locked.session.unlock(password: secret(temporary.password!), timeout: nil)
        XCTAssertTrue(locked.session.isUnlocked)
        XCTAssertEqual(try locked.search(query(.genericPassword, [.account: "alice"]), returnData: true).first?.secretString, "a")
    }

    func testUpdateSpanningALockedAndAnOpenClassChangesNothing() throws {
        try addGenp("svc", "open", secret: "1", accessible: .afterFirstUnlock)
        try addGenp("svc", "locked", secret: "2", accessible: .whenUnlocked)
        let locked = try relock(all: false)
        XCTAssertKeychainError(.interactionNotAllowed,
                               try locked.update(query(.genericPassword, [.service: "svc"]), changes: [.comment: bytes("x")]))
        XCTAssertEqual(try locked.search(query(.genericPassword, [.account: "open"]))[0].string(.comment), "")
    }

    func testDeleteByAnyAttributeWorksWhileLocked() throws {
        try addGenp("svc", "alice", [.comment: "doomed"])
        try addGenp("svc", "bob", [.comment: "kept"])
        let locked = try relock(all: true)
        XCTAssertEqual(try locked.delete(query(.genericPassword, [.comment: "doomed"])), 1)
        XCTAssertKeychainError(.itemNotFound, try locked.delete(query(.genericPassword, [.account: ""])))
        let unlocked = try unlockAndReopen()
        XCTAssertEqual(try allGenp(in: unlocked).map { $0.string(.account) }, ["bob"])
    }

    // MARK: - after-first-unlock and always

    func testAfterFirstUnlockSurvivesLockButNotLockAll() throws {
        try addGenp("svc", "afu", secret: "ck", accessible: .afterFirstUnlock)
        let locked = try relock(all: false)
        XCTAssertEqual(try locked.search(query(.genericPassword, [.account: "afu"]), returnData: true)[0].secretString, "ck")
        XCTAssertNoThrow(try addGenp("svc", "afu2", accessible: .afterFirstUnlock, in: locked))
        XCTAssertEqual(try locked.update(query(.genericPassword, [.account: "afu"]), changes: [.comment: bytes("x")]), 1)

        let rebooted = try relock(all: true)
        XCTAssertKeychainError(.interactionNotAllowed,
                               try rebooted.search(query(.genericPassword, [.account: "afu"]), returnData: true))
    }

    func testThisDeviceOnlyVariantsFollowTheirTiers() throws {
        try addGenp("svc", "aku", secret: "1", accessible: .whenUnlockedThisDeviceOnly)
        try addGenp("svc", "cku", secret: "2", accessible: .afterFirstUnlockThisDeviceOnly)
        try addGenp("svc", "dku", secret: "3", accessible: .alwaysThisDeviceOnly)
        try addGenp("svc", "akpu", secret: "4", accessible: .whenPasscodeSetThisDeviceOnly)
        let locked = try relock(all: false)
        XCTAssertKeychainError(.interactionNotAllowed, try locked.search(query(.genericPassword, [.account: "aku"])))
        XCTAssertKeychainError(.interactionNotAllowed, try locked.search(query(.genericPassword, [.account: "akpu"])))
        XCTAssertEqual(try locked.search(query(.genericPassword, [.account: "cku"]), returnData: true)[0].secretString, "2")
        XCTAssertEqual(try locked.search(query(.genericPassword, [.account: "dku"]), returnData: true)[0].secretString, "3")
        let rebooted = try relock(all: true)
        XCTAssertKeychainError(.interactionNotAllowed, try rebooted.search(query(.genericPassword, [.account: "cku"])))
        XCTAssertEqual(try rebooted.search(query(.genericPassword, [.account: "dku"]), returnData: true)[0].secretString, "3")
        let unlocked = try unlockAndReopen()
        XCTAssertEqual(try unlocked.search(query(.genericPassword, [.service: "svc"]), limit: .all, returnData: true)
            .map { $0.secretString ?? "" }, ["1", "2", "3", "4"])
    }

    func testAlwaysItemsAreReadableAfterLockAll() throws {
        try addGenp("svc", "dk", secret: "always", accessible: .always)
        let rebooted = try relock(all: true)
        XCTAssertFalse(rebooted.session.isUnlocked)
        XCTAssertEqual(try rebooted.search(query(.genericPassword, [.account: "dk"]), returnData: true)[0].secretString, "always")
        XCTAssertNoThrow(try addGenp("svc", "dk2", accessible: .always, in: rebooted))
    }

    // MARK: - Passwords

    func testWrongPasswordIsAuthFailedAndUnlocksNothing() throws {
        try addGenp("svc", "alice")
        let locked = try relock(all: true)
        XCTAssertKeychainError(.authFailed, try locked.session.unlock(password: secret("wrong"), timeout: nil))
        XCTAssertKeychainError(.authFailed, try locked.session.unlock(password: secret(""), timeout: nil))
        XCTAssertEqual(KeychainError(.authFailed).status, -25293)
        let still = try temporary.open()
        XCTAssertFalse(still.session.isUnlocked)
        XCTAssertKeychainError(.interactionNotAllowed, try still.search(query(.genericPassword, [.account: "alice"])))
    }

    func testWrongPasswordsAreCountedAndASuccessResetsTheCount() throws {
        let locked = try relock(all: true)
        XCTAssertEqual(locked.session.failedAttempts, 0)
        for n in 1...3 {
            XCTAssertKeychainError(.authFailed, try temporary.open().session.unlock(password: secret("wrong \(n)"), timeout: nil))
            XCTAssertEqual(try temporary.open().session.failedAttempts, n, "the count is kept in the keychain file")
        }
        XCTAssertEqual(try temporary.open().session.passwordDelay, 0, "the first five failures cost nothing extra")
        try temporary.unlock()
        XCTAssertEqual(try temporary.open().session.failedAttempts, 0)
    }

    func testAfterFiveWrongPasswordsFurtherAttemptsAreSlowed() throws {
        for n in 1...6 {
            XCTAssertKeychainError(.authFailed, try temporary.open().session.unlock(password: secret("wrong \(n)"), timeout: nil))
        }
        XCTAssertGreaterThan(try temporary.open().session.passwordDelay, 0)
        XCTAssertLessThanOrEqual(try temporary.open().session.passwordDelay, 30)
    }

    /// Issue 12: the engine itself waits out the delay, so a library caller
    /// is slowed as the command line is (the CLI used to do the sleeping).
    /// On a clock the test sets (the end-to-end suite waits on the real one).
    func testTheEngineEnforcesTheWrongPasswordDelay() throws {
        let clock = VirtualClock(start: Clock.milliseconds())
        func opened() throws -> Keychain {
            try temporary.open(time: clock.source)
        }
        for n in 1...6 {
            XCTAssertKeychainError(.authFailed, try opened().session.unlock(password: secret("wrong \(n)"), timeout: nil))
        }
        XCTAssertEqual(clock.slept, 1000, "the sixth waited 1 s")
        let next = try opened()
        let wait = next.session.passwordDelayMilliseconds
        XCTAssertEqual(wait, 2000, "six failures: 2 s to wait")
        XCTAssertKeychainError(.authFailed, try next.session.unlock(password: secret("wrong again"), timeout: nil))
        XCTAssertEqual(clock.slept, 1000 + Int64(wait), "unlock did not wait")
        XCTAssertNoThrow(try opened().session.unlock(password: secret(temporary.password!), timeout: nil), "the right password still works after the wait")
        XCTAssertEqual(clock.slept, 1000 + Int64(wait) + 4000, "after seven failures, 4 s more")
    }

    func testUnlockWithTheRightPasswordOnTheSameObjectIsSeenByTheNextOpen() throws {
        try addGenp("svc", "alice", secret: "a")
        let locked = try relock(all: true)
        try locked.session.unlock(password: secret(temporary.password!), timeout: 60)
        XCTAssertEqual(try temporary.open().search(query(.genericPassword, [.account: "alice"]), returnData: true)[0].secretString, "a")
    }

    func testEmptyPasswordIsRefusedAtCreate() throws {
        XCTAssertKeychainError(.param,
                               try Keychain.create(at: temporary.directory + "/empty.keychain", password: secret(""),
                                                   environment: temporary.environment))
    }

    func testCreateOverAnExistingKeychainIsDuplicateKeychain() throws {
        try addGenp("svc", "alice")
        XCTAssertKeychainError(.duplicateKeychain,
                               try Keychain.create(at: temporary.path, password: secret("other"), environment: temporary.environment))
        XCTAssertEqual(try allGenp().count, 1)
    }

    func testOpeningAMissingKeychainIsNoSuchKeychain() {
        XCTAssertKeychainError(.noSuchKeychain,
                               try Keychain.open(at: temporary.directory + "/missing.keychain", environment: temporary.environment))
    }

    // MARK: - Keychains without a password

    func testKeychainWithoutAPasswordIsAlwaysUnlocked() throws {
        let bare = try TemporaryKeychain(password: nil, name: "bare", sharing: temporary)
        let opened = try bare.open()
        XCTAssertFalse(opened.hasPassword)
        XCTAssertTrue(opened.session.isUnlocked)
        try addGenp("svc", "alice", secret: "a", in: opened)
        try addGenp("svc", "bob", secret: "b", accessible: .afterFirstUnlock, in: opened)
        for all in [false, true] {
            try bare.lock(all: all)
            let again = try bare.open()
            XCTAssertTrue(again.session.isUnlocked)
            XCTAssertEqual(try again.search(Query(itemClass: .genericPassword), limit: .all, returnData: true)
                .map { $0.secretString ?? "" }, ["a", "b"])
        }
        XCTAssertNoThrow(try opened.session.unlock(password: secret("anything"), timeout: nil))
    }

    func testWhenPasscodeSetItemNeedsAKeychainWithAPassword() throws {
        let bare = try TemporaryKeychain(password: nil, name: "bare", sharing: temporary)
        let opened = try bare.open()
        XCTAssertKeychainError(.notAvailable, try addGenp("svc", "alice", accessible: .whenPasscodeSetThisDeviceOnly, in: opened))
        XCTAssertEqual(try allGenp(in: opened).count, 0)
        XCTAssertEqual(KeychainError(.notAvailable).status, -25291)
        // With a password it is an ordinary when-unlocked item.
        XCTAssertNoThrow(try addGenp("svc", "alice", accessible: .whenPasscodeSetThisDeviceOnly))
    }

    // MARK: - Dump while locked

    func testDumpWhileLockedListsItemsAsLockedAndRefusesData() throws {
        try addGenp("svc", "locked", secret: "1")
        try addGenp("svc", "open", secret: "2", accessible: .afterFirstUnlock)
        let locked = try relock(all: false)
        var seen: [(Item.Availability, String)] = []
        try locked.dump(returnData: false) { seen.append(($0.availability, $0.string(.account))) }
        XCTAssertEqual(seen.map(\.0), [.locked, .available])
        XCTAssertEqual(seen.map(\.1), ["", "open"], "a locked item shows no attributes")
        var streamed = 0
        XCTAssertKeychainError(.interactionNotAllowed, try locked.dump(returnData: true) { _ in streamed += 1 })
        XCTAssertEqual(streamed, 0, "nothing is streamed before the failure")
    }
}
