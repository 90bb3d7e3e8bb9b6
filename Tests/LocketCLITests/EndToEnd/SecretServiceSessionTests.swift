import Foundation
import LocketCore
import LocketSupport
import XCTest

/// Issue 36 (SPEC §20), the session's keyring, with real components: each
/// case a script in Tests/Fixtures/session. The PAM cases make a real user
/// (root only; removed after) and load the build tree's pam_locket.so
/// (`LOCKET_PAM_MODULE`, `make pam`) through libpam-wrapper from a service
/// directory of their own: nothing in /etc/pam.d is read or written.
class SecretServiceSessionCase: SecretServiceCase {
    static let module = ProcessInfo.processInfo.environment["LOCKET_PAM_MODULE"].flatMap { $0.isEmpty ? nil : $0 }
        ?? LocketBinary.repositoryRoot + "/.build/pam/pam_locket.so"

    func runSession(_ file: String, _ name: String, needs tools: [String] = [], environment extra: [String: String] = [:],
                    timeout: Double = 120, file testFile: StaticString = #filePath, line: UInt = #line) throws {
        try runCase("../session/" + file, name, needs: tools, environment: extra.merging(["LOCKET_PAM_MODULE": Self.module]) { $1 },
                    timeout: timeout, file: testFile, line: line)
    }
}

final class SecretServiceSessionPAMTests: SecretServiceSessionCase {
    /// The users' keychains for users.py's `init_keychain`, made here in-process
    /// at the tests' Argon2id cost (a login then unlocks at that cost too), not
    /// by `locket init --kdf interactive` in the case: 15 of the class's 21
    /// INTERACTIVE hashes, ~2 CPU-s (issue 38). In TEST_KEYCHAINS/NAME:
    /// `password`, `login.keychain` and its `device.key`; NAME `login` has the
    /// user's login password (this test's own, so that the sampler of one test
    /// never sees another's), `other` a password that is not it.
    override func runSession(_ file: String, _ name: String, needs tools: [String] = [], environment extra: [String: String] = [:],
                             timeout: Double = 120, file testFile: StaticString = #filePath, line: UInt = #line) throws {
        let keychains = sandbox.root + "/keychains"
        mkdir(keychains, 0o700)
        for (keychain, prefix) in [("login", "Login-pw-"), ("other", "Other-pw-")] {
            let made = keychains + "/" + keychain
            let password = prefix + (0..<6).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            let environment = Environment(["HOME": made, "XDG_DATA_HOME": made, "XDG_STATE_HOME": made, "LOCKET_DEVICE_KEY": made + "/device.key",
                                           "XDG_RUNTIME_DIR": made + "/run", "LOCKET_SESSION": "dir"])
            mkdir(made, 0o700)
            mkdir(made + "/run", 0o700)
            try Keychain.create(at: made + "/login.keychain", password: SecureBytes(copying: Array(password.utf8)), kdf: .weakForTests,
                                environment: environment)
            try Data(password.utf8).write(to: URL(fileURLWithPath: made + "/password"))
        }
        try super.runSession(file, name, needs: tools, environment: extra.merging(["TEST_KEYCHAINS": keychains]) { $1 }, timeout: timeout,
                             file: testFile, line: line)
    }

    /// authenticate + open_session unlock the login keychain; a running provider says Locked=false at once; the password in no argv, environment or log.
    func testLoginUnlocks() throws { try runSession("pam_cases.py", "login_unlocks") }

    /// A keychain whose password is not the login password stays locked, the login succeeds, the next login does not try again.
    func testWrongKeychainPasswordLeavesItLocked() throws { try runSession("pam_cases.py", "wrong_keychain_password") }

    /// chauthtok changes the keychain's password with the login password; root's change (no old password) does not.
    func testChauthtokRotatesTheKeychainPassword() throws { try runSession("pam_cases.py", "chauthtok_rotates") }

    /// close_session with lock_on_close locks, unless logind lists another live session.
    func testCloseSessionLocks() throws { try runSession("pam_cases.py", "close_session_locks") }

    /// A locket that hangs is killed at max_wait, with what it started; the login goes on.
    func testHangingLocketIsKilledWithinTheBound() throws { try runSession("pam_cases.py", "hanging_locket_is_killed") }

    /// No password, no keychain, no keychain password, a missing, non-executable or replaceable locket, no home: a log line each, the login goes on.
    func testBadInput() throws { try runSession("pam_cases.py", "bad_input") }

    /// A screen unlock (setcred REINITIALIZE_CRED, no session) unlocks; ESTABLISH_CRED does not.
    func testScreenUnlockThroughSetcred() throws { try runSession("pam_cases.py", "screen_unlock_setcred") }

    /// README "On a server": the password sealed by systemd-creds (host key), the unit's ExecStart as the account, the provider finds it unlocked.
    func testUnattendedBootUnlock() throws { try runSession("pam_cases.py", "unattended_boot_unlock", needs: ["secret-tool"]) }

    /// A fresh user: `secret-service enable`, a login, and `python3 -m keyring` answers with no prompt.
    func testFreshUserEnableThenLogin() throws { try runSession("pam_cases.py", "fresh_user_enable_then_login", needs: ["secret-tool"]) }
}

final class SecretServiceSessionActivationTests: SecretServiceSessionCase {
    /// With the switch on, the first client starts locket by D-Bus activation over gnome-keyring's file; off, gnome-keyring's is started.
    func testActivationAndPrecedence() throws { try runSession("activation_cases.py", "activation_and_precedence", needs: ["secret-tool"]) }
}

final class SecretServiceSessionLogindTests: SecretServiceSessionCase {
    /// Session.Lock, LockedHint and PrepareForSleep(true) from logind (dbusmock) lock the keychain, as its settings say.
    func testLockAndSleep() throws { try runSession("logind_cases.py", "lock_and_sleep") }

    /// No system bus, or no logind on it: said once, and the provider serves; logind appearing later is picked up.
    func testNoSystemBusOrLogind() throws { try runSession("logind_cases.py", "no_logind") }
}
