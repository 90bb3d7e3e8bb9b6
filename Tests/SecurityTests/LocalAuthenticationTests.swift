import Foundation
import LocalAuthentication
import LocketCore
import LocketTestSupport
import XCTest

/// LAError, LAErrorDomain, LAPolicy and canEvaluatePolicy with Apple's
/// names, types and values, answering truthfully for this machine (issue
/// 37): presence is the keychain password at the terminal; there is no
/// biometry, watch or companion.
final class LocalAuthenticationTests: SecurityTestCase {
    func testThePoliciesAndErrorsHaveApplesValues() {
        XCTAssertEqual(LAErrorDomain, "com.apple.LocalAuthentication")
        XCTAssertEqual(LAPolicy.deviceOwnerAuthenticationWithBiometrics.rawValue, 1)
        XCTAssertEqual(LAPolicy.deviceOwnerAuthentication.rawValue, 2)
        XCTAssertEqual(LAPolicy.deviceOwnerAuthenticationWithWatch, .deviceOwnerAuthenticationWithCompanion)
        XCTAssertEqual(LAError.Code.authenticationFailed.rawValue, -1)
        XCTAssertEqual(LAError.Code.userCancel.rawValue, -2)
        XCTAssertEqual(LAError.Code.passcodeNotSet.rawValue, -5)
        XCTAssertEqual(LAError.Code.biometryNotAvailable.rawValue, -6)
        XCTAssertEqual(LAError.touchIDNotAvailable, .biometryNotAvailable)
        XCTAssertEqual(LAError.Code.notInteractive.rawValue, -1004)
        let error = LAError(.userCancel)
        XCTAssertEqual(error.code, .userCancel)
        XCTAssertEqual((error as NSError).domain, LAErrorDomain)
        XCTAssertEqual((error as NSError).code, -2)
        do {
            throw LAError(.biometryLockout)
        } catch LAError.biometryLockout {
        } catch {
            XCTFail("catch LAError.biometryLockout did not match \(error)")
        }
    }

    /// What needs no terminal to answer: biometry and companions never; a
    /// context that may not ask, or that was invalidated, not presence either.
    func testWhatThisMachineCanNeverEvaluate() {
        let context = LAContext()
        var error: NSError?
        XCTAssertFalse(context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        XCTAssertEqual(error?.domain, LAErrorDomain)
        XCTAssertEqual(error?.code, LAError.Code.biometryNotAvailable.rawValue)
        XCTAssertEqual(LAError.Code(rawValue: error?.code ?? 0), .biometryNotAvailable)
        error = nil
        XCTAssertFalse(context.canEvaluatePolicy(.deviceOwnerAuthenticationWithCompanion, error: &error))
        XCTAssertEqual(error?.code, LAError.Code.companionNotAvailable.rawValue)
        XCTAssertFalse(context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))

        context.interactionNotAllowed = true
        XCTAssertFalse(context.canEvaluatePolicy(.deviceOwnerAuthentication, error: &error))
        XCTAssertEqual(error?.code, LAError.Code.notInteractive.rawValue)
        let invalidated = LAContext()
        invalidated.invalidate()
        XCTAssertFalse(invalidated.canEvaluatePolicy(.deviceOwnerAuthentication, error: &error))
        XCTAssertEqual(error?.code, LAError.Code.invalidContext.rawValue)
    }

    /// Presence (deviceOwnerAuthentication): yes at a terminal with a keychain
    /// that has a password; no without a terminal; no for a keychain without
    /// a password (as a device without a passcode).
    func testPresenceIsAvailableAtATerminalWithAKeychainPassword() throws {
        let host = try XCTUnwrap(SecurityTestHost.path, "SecurityTestHost was not built next to the tests")
        var environment = sandbox.environment
        environment["PATH"] = "/usr/bin:/bin"
        let policy = String(LAPolicy.deviceOwnerAuthentication.rawValue)
        let atTerminal = TerminalDriver.run(host, ["can-evaluate", policy], answers: [], environment: environment, timeout: 30)
        XCTAssertEqual(atTerminal.out.trimmingCharacters(in: .whitespacesAndNewlines), "yes", atTerminal.summary)
        let biometry = TerminalDriver.run(host, ["can-evaluate", "1"], answers: [], environment: environment, timeout: 30)
        XCTAssertEqual(biometry.out.trimmingCharacters(in: .whitespacesAndNewlines), "no -6", biometry.summary)
        let headless = Spawn.run("/usr/bin/setsid", ["-w", host, "can-evaluate", policy], environment: environment, input: .devNull, timeout: 30)
        XCTAssertEqual(headless.out, "no -1004\n", headless.summary)

        let open = sandbox.root + "/open.keychain"
        try Keychain.create(at: open, password: nil, kdf: .weakForTests, environment: .process)
        environment["LOCKET_KEYCHAIN"] = open
        let noPassword = TerminalDriver.run(host, ["can-evaluate", policy], answers: [], environment: environment, timeout: 30)
        XCTAssertEqual(noPassword.out.trimmingCharacters(in: .whitespacesAndNewlines), "no -5", noPassword.summary)
    }
}
