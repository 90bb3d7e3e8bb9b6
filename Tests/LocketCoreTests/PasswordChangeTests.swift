import LocketCore
import XCTest

/// SPEC §5: `passwd` changes the password atomically (only class keys are
/// re-wrapped); removing the password deletes every when-passcode-set item.
final class PasswordChangeTests: KeychainTestCase {
    func testChangedPasswordUnlocksAndTheOldOneNoLongerDoes() throws {
        let added = try addGenp("svc", "alice", secret: "a")
        try addGenp("svc", "tdo", secret: "t", accessible: .whenUnlockedThisDeviceOnly)
        try keychain.session.changePassword(old: secret(temporary.password!), new: secret("new password"))
        try temporary.lock(all: true)
        XCTAssertKeychainError(.authFailed, try temporary.open().session.unlock(password: secret(temporary.password!), timeout: nil))
        try temporary.open().session.unlock(password: secret("new password"), timeout: nil)
        let unlocked = try temporary.open()
        let all = try allGenp(in: unlocked)
        XCTAssertEqual(all.map { $0.secretString ?? "" }, ["a", "t"])
        XCTAssertEqual(all[0].persistentRef, added.persistentRef)
    }

    func testAPasswordChangeKeepsTheSessionUnlocked() throws {
        try addGenp("svc", "alice", secret: "a")
        try keychain.session.changePassword(old: secret(temporary.password!), new: secret("new password"))
        XCTAssertEqual(try temporary.open().search(query(.genericPassword, [.account: "alice"]), returnData: true)[0].secretString, "a")
    }

    func testWrongOldPasswordChangesNothing() throws {
        try addGenp("svc", "alice", secret: "a")
        XCTAssertKeychainError(.authFailed, try keychain.session.changePassword(old: secret("wrong"), new: secret("new password")))
        try temporary.lock(all: true)
        XCTAssertKeychainError(.authFailed, try temporary.open().session.unlock(password: secret("new password"), timeout: nil))
        XCTAssertNoThrow(try temporary.unlock())
    }

    func testEmptyNewPasswordIsRefused() throws {
        XCTAssertKeychainError(.param, try keychain.session.changePassword(old: secret(temporary.password!), new: secret("")))
    }

    func testRemovingThePasswordDeletesWhenPasscodeSetItemsOnly() throws {
        try addGenp("svc", "akpu1", accessible: .whenPasscodeSetThisDeviceOnly)
        try addGenp("svc", "akpu2", accessible: .whenPasscodeSetThisDeviceOnly)
        try addGenp("svc", "ak", secret: "ak")
        try addGenp("svc", "aku", secret: "aku", accessible: .whenUnlockedThisDeviceOnly)
        XCTAssertEqual(keychain.session.passcodeItemCount, 2)
        XCTAssertEqual(try keychain.session.changePassword(old: secret(temporary.password!), new: nil), 2)
        let bare = try temporary.open()
        XCTAssertFalse(bare.hasPassword)
        XCTAssertTrue(bare.session.isUnlocked)
        XCTAssertEqual(try allGenp(in: bare).map { $0.string(.account) }, ["ak", "aku"])
        XCTAssertKeychainError(.notAvailable, try addGenp("svc", "akpu3", accessible: .whenPasscodeSetThisDeviceOnly, in: bare))
        try temporary.lock(all: true)
        XCTAssertEqual(try allGenp(in: temporary.open()).map { $0.secretString ?? "" }, ["ak", "aku"], "always unlocked now")
    }

    func testRemovingAPasswordThatIsNotThereIsRefused() throws {
        let bare = try TemporaryKeychain(password: nil, name: "bare", sharing: temporary)
        XCTAssertKeychainError(.param, try bare.open().session.changePassword(old: nil, new: nil))
    }

    func testSettingAPasswordOnAKeychainWithoutOne() throws {
        let bare = try TemporaryKeychain(password: nil, name: "bare", sharing: temporary)
        let opened = try bare.open()
        try addGenp("svc", "alice", secret: "a", in: opened)
        try opened.session.changePassword(old: nil, new: secret("now with one"), kdf: .weakForTests)
        try bare.lock(all: true)
        let locked = try bare.open()
        XCTAssertTrue(locked.hasPassword)
        XCTAssertKeychainError(.interactionNotAllowed, try locked.search(query(.genericPassword, [.account: "alice"])))
        XCTAssertKeychainError(.authFailed, try locked.session.unlock(password: secret("wrong"), timeout: nil))
        try locked.session.unlock(password: secret("now with one"), timeout: nil)
        let unlocked = try bare.open()
        XCTAssertEqual(try unlocked.search(query(.genericPassword, [.account: "alice"]), returnData: true)[0].secretString, "a")
        XCTAssertNoThrow(try addGenp("svc", "akpu", accessible: .whenPasscodeSetThisDeviceOnly, in: unlocked))
    }
}
