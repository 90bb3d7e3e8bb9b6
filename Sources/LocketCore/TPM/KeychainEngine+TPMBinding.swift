import LocketSupport

/// A keychain bound to its machine's TPM (SPEC §21, `init --tpm`, `settings
/// --tpm`), as Apple's keybag is bound to its device's UID key: a random
/// secret T, sealed by the TPM (no PCRs, no authorization value: docs/TPM.md
/// "TPM choices"), is kept in the meta row `tpm` (the header's MAC covers it)
/// and mixed into every key that wraps the keybag: the password's KEK (and
/// so the presence keys') and the device key. The file, the device secret and
/// the password then open nothing without this TPM, and nothing after it is
/// cleared.
///
/// T is unsealed only when a device-wrapped key or the KEK is needed: an
/// unlock keeps what the device key opens (`dk`, `dku`, `idx`) in the
/// session's after-first-unlock tier, so `find` in an unlocked session starts
/// no `locket-tpm`; `lock --all` (a reboot) forgets them, and the next
/// command then unseals once.
extension KeychainEngine {
    /// Whether the keychain is bound to a TPM.
    var isTPMBound: Bool { meta[.tpm] != nil }

    /// T, unsealed by the TPM at its first use in this process. Another TPM
    /// (or this one cleared) is errSecDecode `.boundToOtherDevice`.
    func tpmBinding() throws -> SecureBytes {
        if let tpmSecret { return tpmSecret }
        guard let sealed = meta[.tpm] else { throw KeychainError(.param, "\(path) is not bound to a TPM") }
        let file: TSS2KeyFile
        do {
            file = try TSS2KeyFile(der: sealed)
        } catch let error as KeychainError {
            throw KeychainError(.decode, "the TPM-sealed secret of \(path) is malformed: \(error.detail ?? "unreadable")")
        }
        let secret: SecureBytes
        do {
            secret = try tpm().unseal(file)
        } catch let error as KeychainError where error.reason == .boundToOtherDevice {
            throw KeychainError(.decode, """
                \(path) is bound to another TPM, or to this one before it was cleared: its keys open only with the TPM \
                that sealed them
                """, reason: .boundToOtherDevice)
        }
        guard secret.count == Self.tpmSecretLength else {
            throw KeychainError(.decode, "the TPM unsealed a secret of \(secret.count) bytes for \(path), not \(Self.tpmSecretLength)")
        }
        tpmSecret = secret
        return secret
    }

    static let tpmSecretLength = 32

    /// A new binding secret and its sealed form, from the TPM `environment`
    /// names (`init --tpm`: a helper for this alone).
    static func newTPMBinding(environment: Environment) throws -> (secret: SecureBytes, sealed: [UInt8]) {
        let client = try TPMClient(environment: environment)
        defer { client.close() }
        let secret = try SecureBytes(copying: Sodium.random(tpmSecretLength))
        return (secret, try client.seal(secret).der)
    }

    /// `kek` mixed with T: what wraps the keybag of a bound keychain.
    static func bind(kek: SecureBytes, to secret: SecureBytes, keychainID: [UInt8]) throws -> SecureBytes {
        try mix(kek, secret, "locket.kek.tpm.v1", keychainID)
    }

    /// The device key mixed with T.
    static func bind(device: SecureBytes, to secret: SecureBytes, keychainID: [UInt8]) throws -> SecureBytes {
        try mix(device, secret, "locket.device.tpm.v1", keychainID)
    }

    private static func mix(_ key: SecureBytes, _ secret: SecureBytes, _ label: StaticString, _ keychainID: [UInt8]) throws -> SecureBytes {
        // T goes in from its guarded buffer, never copied to the heap.
        try secret.withUnsafeBytes { t in
            try keychainID.withUnsafeBytes { id in
                try KeyDerivation.derive(key, label, t, id, UnsafeRawBufferPointer(start: nil, count: 0))
            }
        }
    }

    /// The KEK the keybag is wrapped with for the password's `kek`: itself,
    /// or mixed with T on a bound keychain (which unseals T).
    func keybagKEK(_ kek: SecureBytes) throws -> SecureBytes {
        guard isTPMBound else { return kek }
        return try Self.bind(kek: kek, to: tpmBinding(), keychainID: keybag.keychainID)
    }

    /// The device key the keybag is wrapped with: `device`, or mixed with T
    /// on a bound keychain (which unseals T); nil without a device secret.
    func keybagDevice() throws -> SecureBytes? {
        guard let device else { return nil }
        guard isTPMBound else { return device }
        return try Self.bind(device: device, to: tpmBinding(), keychainID: keybag.keychainID)
    }

    /// On a bound keychain, after the session's keys: the keys the device key
    /// opens, through the TPM, unless the session already holds them all.
    func loadDeviceKeysThroughTPM() throws {
        guard device != nil else { return }
        var missing = false
        for name in Keybag.deviceWrappedNames where keybag.rows[name]?.device != nil && cache.keys[name] == nil { missing = true }
        guard missing, let boundDevice = try keybagDevice() else { return }
        for (name, key) in keybag.unwrapWithDevice(boundDevice).entries where cache.keys[name] == nil { cache.keys.set(name, key) }
    }
}
