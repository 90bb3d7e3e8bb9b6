import Foundation
@testable import LocketCore
import XCTest

/// Secure Enclave keys in the engine (SPEC §21; docs/TPM.md "For the
/// engine"): `keys.generateKey` with the Secure Enclave token makes the key
/// in the TPM and stores only its key file; `withKey` uses it through the
/// TPM; an application password is its TPM authorization value. In-process,
/// against the class's swtpm.
final class TPMKeychainKeysTests: TPMTestCase {
    private var temporary: TemporaryKeychain!

    override func setUpWithError() throws {
        try super.setUpWithError()
        temporary = try TemporaryKeychain()
    }

    override func tearDown() {
        temporary?.remove()
        temporary = nil
        super.tearDown()
    }

    /// The test's keychain opened with LOCKET_TPM at `tpm` (nil: no TPM named).
    private func keychain(_ tpm: SoftwareTPM?) throws -> Keychain {
        var variables = [
            "HOME": temporary.directory, "XDG_DATA_HOME": temporary.directory + "/data", "XDG_STATE_HOME": temporary.directory + "/state",
            "XDG_RUNTIME_DIR": temporary.directory + "/run", "LOCKET_SESSION": "dir",
        ]
        if let tpm { variables["LOCKET_TPM"] = tpm.tcti }
        return try Keychain.open(at: temporary.path, environment: Environment(variables))
    }

    private func enclave(_ label: String, _ control: AccessControl? = nil) -> KeyItemOptions {
        var options = KeyItemOptions()
        options.label = label
        options.token = .secureEnclave
        options.accessControl = control
        return options
    }

    private func query(_ label: String) throws -> Query {
        var query = Query(itemClass: .key)
        try query.match(.label, Array(label.utf8))
        return query
    }

    func testAKeyMadeInTheTPMIsStoredAsItsKeyFileAndUsedThroughIt() throws {
        let tpm = try sharedTPM()
        let keychain = try keychain(tpm)
        let (item, publicKey) = try keychain.keys.generateKey(.p256, options: enclave("se"))
        XCTAssertTrue(item.isHeldByTPM)
        XCTAssertEqual(item[.extractable], [0x30])
        XCTAssertEqual(item[.applicationLabel], publicKey.applicationLabel)
        // The value is the TPM's key file, its public key the one returned; no PKCS#8 anywhere.
        let stored = try keychain.engine.transaction(write: false) { try keychain.engine.rows(try query("se"), limit: .one, data: true) }
        let file = try TSS2KeyFile(der: try XCTUnwrap(stored.first?.data).bytes)
        XCTAssertEqual(try TPMKey(file).publicKey.subjectPublicKeyInfo, publicKey.subjectPublicKeyInfo)
        XCTAssertEqual(try keychain.keys.tpmKeyFile(try query("se")).file.der, file.der)
        // Made and used through one helper: the keychain's.
        let helper = try XCTUnwrap(keychain.engine.tpmClient?.helperProcessID)
        let message = Array("signed in the TPM".utf8)
        let signature = try keychain.keys.withKey(try query("se"), needsPrivate: true) { _, key in
            XCTAssertTrue(key is TPMKeyUse)
            return try key.sign(message, algorithm: .ecdsaMessageX962SHA256)
        }
        XCTAssertTrue(try publicKey.verify(signature: signature, for: message, algorithm: .ecdsaMessageX962SHA256))
        XCTAssertEqual(keychain.engine.tpmClient?.helperProcessID, helper)
        // ECDH equals the software side's; ECIES decrypts through the TPM.
        let peer = try AsymmetricKey.generate(.p256)
        let shared = try keychain.keys.withKey(try query("se"), needsPrivate: true) { _, key in try key.sharedSecret(with: peer.publicKey) }
        XCTAssertEqual(shared.bytes, try peer.sharedSecret(with: publicKey).bytes)
        let plaintext = Array("opened in the TPM".utf8)
        for algorithm: KeyAlgorithm in [.eciesCofactorVariableIVX963SHA256AESGCM, .eciesStandardX963SHA256AESGCM] {
            let ciphertext = try publicKey.encrypt(plaintext, algorithm: algorithm)
            let opened = try keychain.keys.withKey(try query("se"), needsPrivate: true) { _, key in try key.decrypt(ciphertext, algorithm: algorithm) }
            XCTAssertEqual(opened.bytes, plaintext, algorithm.rawValue)
        }
        // Its public key needs no TPM; its private key never leaves.
        XCTAssertEqual(try self.keychain(nil).keys.publicKey(try query("se")).key.subjectPublicKeyInfo, publicKey.subjectPublicKeyInfo)
        XCTAssertKeychainError(.dataNotAvailable, try keychain.keys.exportableKey(try query("se")))
    }

    /// The application password is the key's TPM authorization value, not
    /// an Argon2id key: the access record says so, the TPM refuses a wrong
    /// one and counts it, and a missing one is asked for before the TPM.
    func testTheApplicationPasswordIsTheKeysAuthorizationValue() throws {
        let tpm = try softwareTPM()
        let keychain = try keychain(tpm)
        let control = AccessControl(protection: .whenUnlocked, flags: [.applicationPassword])
        let missing = assertKeychainError(.interactionNotAllowed) { try keychain.keys.generateKey(.p256, options: self.enclave("guarded", control)) }
        XCTAssertEqual(missing?.reason, .proofNeeded(AccessRequest(keychainPassword: false, applicationPassword: true, label: "guarded")))
        XCTAssertNil(keychain.engine.tpmClient, "refused before any TPM work")
        keychain.session.applicationPassword = try SecureBytes(copying: Array("right".utf8))
        let (_, publicKey) = try keychain.keys.generateKey(.p256, options: enclave("guarded", control))
        let found = try keychain.engine.transaction(write: false) { try keychain.engine.rows(try query("guarded"), limit: .one, data: false) }
        let access = try XCTUnwrap(found.first?.access)
        XCTAssertTrue(access.tpmAuthorization)
        XCTAssertNil(access.applicationKDF, "no Argon2id: the TPM checks it")

        let user = try self.keychain(tpm)
        assertKeychainError(.interactionNotAllowed) { try user.keys.withKey(try self.query("guarded"), needsPrivate: true) { _, _ in () } }
        user.session.applicationPassword = try SecureBytes(copying: Array("wrong".utf8))
        let wrong = assertKeychainError(.authFailed) {
            try user.keys.withKey(try self.query("guarded"), needsPrivate: true) { _, key in try key.sign([1], algorithm: .ecdsaMessageX962SHA256) }
        }
        XCTAssertTrue(wrong?.message.contains("1 of 3 failures") == true, "\(wrong!)")
        user.session.applicationPassword = try SecureBytes(copying: Array("right".utf8))
        let signature = try user.keys.withKey(try query("guarded"), needsPrivate: true) { _, key in try key.sign([1], algorithm: .ecdsaMessageX962SHA256) }
        XCTAssertTrue(try publicKey.verify(signature: signature, for: [1], algorithm: .ecdsaMessageX962SHA256))
    }

    /// No TPM named and none found: errSecNotAvailable saying why, and no item.
    func testWithoutATPMNothingIsMadeAndTheRefusalSaysWhy() throws {
        guard access(TPMLocation.defaultDevice, F_OK) != 0 else { throw XCTSkip("this machine has \(TPMLocation.defaultDevice)") }
        let keychain = try keychain(nil)
        let refused = assertKeychainError(.notAvailable) { try keychain.keys.generateKey(.p256, options: self.enclave("none")) }
        XCTAssertEqual(refused?.reason, .noTPM)
        XCTAssertKeychainError(.itemNotFound, try keychain.search(Query(itemClass: .key)))
        var soft = KeyItemOptions()
        soft.token = .softwareEnclave
        let (item, _) = try keychain.keys.generateKey(.p256, options: soft)
        XCTAssertFalse(item.isHeldByTPM)
        XCTAssertEqual(item[.extractable], [0x30])
        XCTAssertKeychainError(.param, try keychain.keys.generateKey(.p384, options: soft))
        assertKeychainError(.param) { try keychain.keys.generateKey(.ed25519, options: self.enclave("ed")) }
    }
}
