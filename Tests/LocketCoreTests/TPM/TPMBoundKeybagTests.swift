import Foundation
@testable import LocketCore
import XCTest

/// A keychain bound to the TPM (SPEC §21, `settings --tpm`): the binding is
/// in the keys, not only a refusal. In-process, against the class's swtpm:
/// once bound, neither the password's KEK nor the device key opens any row
/// of the keybag by itself, so a copy whose `tpm` row is removed, or whose
/// code skips the unseal, opens nothing.
final class TPMBoundKeybagTests: TPMTestCase {
    func testNeitherThePasswordNorTheDeviceKeyOpensTheKeybagWithoutTheTPM() throws {
        let tpm = try sharedTPM()
        let temporary = try TemporaryKeychain()
        defer { temporary.remove() }
        let environment = Environment([
            "HOME": temporary.directory, "XDG_DATA_HOME": temporary.directory + "/data", "XDG_STATE_HOME": temporary.directory + "/state",
            "XDG_RUNTIME_DIR": temporary.directory + "/run", "LOCKET_SESSION": "dir", "LOCKET_TPM": tpm.tcti,
        ])
        let password = try SecureBytes(copying: Array("correct horse".utf8))
        let before = try Keychain.open(at: temporary.path, environment: environment)
        let rawKEK = try before.engine.keybag.kek(password: password)
        let device = try XCTUnwrap(before.engine.device)
        XCTAssertFalse(before.engine.keybag.unwrapWithDevice(device).entries.isEmpty, "unbound: the device key opens dk, dku and idx")
        XCTAssertTrue(try before.session.bindToTPM(password: password))
        XCTAssertFalse(try before.session.bindToTPM(password: password), "bound once")

        let bound = try Keychain.open(at: temporary.path, environment: environment)
        let keybag = bound.engine.keybag
        XCTAssertTrue(bound.session.isTPMBound)
        XCTAssertThrowsError(try keybag.unwrapWithKEK(rawKEK, device: device)) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .authFailed, "the password's KEK alone opens no class key")
        }
        XCTAssertTrue(keybag.unwrapWithDevice(device).entries.isEmpty, "the device key alone opens nothing")
        for name in PresenceKeys.names where keybag.rows[name] != nil {
            XCTAssertNil(try? keybag.unwrapPresence(name, kek: rawKEK), "\(name): the presence key needs the TPM too")
        }
        // With T from the TPM both open, and the header authenticates.
        let kek = try bound.engine.keybagKEK(rawKEK)
        let boundDevice = try XCTUnwrap(try bound.engine.keybagDevice())
        XCTAssertTrue(bound.engine.isBoundDevice(boundDevice))
        let keys = try keybag.unwrapWithKEK(kek, device: boundDevice, sameDevice: true)
        XCTAssertNotNil(keys[Keybag.indexKeyName])
        XCTAssertNotNil(keybag.unwrapWithDevice(boundDevice)[ProtectionClass.alwaysThisDeviceOnly.rawValue])
    }
}
