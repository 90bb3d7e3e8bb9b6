import LocketSupport

/// `settings --tpm` and `--no-tpm` (SPEC §21): binding an existing keychain
/// to this machine's TPM, or freeing it, in one write transaction.
extension KeychainSession {
    /// Whether the keychain is bound to a TPM (`init --tpm`, `settings --tpm`).
    public var isTPMBound: Bool { engine.isTPMBound }

    /// Binds the keychain to this machine's TPM: checks `password`, has the
    /// TPM seal a new secret T (before anything is written), then re-wraps
    /// every class key, the blind-index key and the presence keys for the
    /// KEK and the device key mixed with T, and stores the sealed T, in one
    /// write transaction: after a crash either the old wrapping or the new
    /// one opens the keychain. The class keys stay the same, so no item is
    /// re-sealed and every item stays readable. Returns false when the
    /// keychain was bound already (nothing changes).
    ///
    /// Refused: a keychain without a password (errSecParam: the binding
    /// would then be all that guards it, and every command would need the
    /// TPM), a remote keychain (errSecParam: its devices have keys of their
    /// own, SPEC §17), a keychain not last unlocked on this device
    /// (errSecNotAvailable), no TPM (errSecNotAvailable `.noTPM`).
    @discardableResult
    public func bindToTPM(password: SecureBytes) throws -> Bool {
        try engine.requireOwner("binding the keychain to the TPM")
        try engine.require(.settings)
        guard !engine.isTPMBound else { return false }
        try Self.checkTPMBinding(policy: engine.storage.policy, hasPassword: engine.hasPassword, address: engine.path)
        // The TPM first: without one, nothing is asked or counted.
        let client = try engine.tpm()
        let (kek, keys, presence, device) = try openEverything(password)
        let secret = try SecureBytes(copying: Sodium.random(KeychainEngine.tpmSecretLength))
        let sealed = try client.seal(secret).der
        let id = engine.keybag.keychainID
        engine.tpmSecret = secret
        do {
            try rewrap(keys, presence, kek: KeychainEngine.bind(kek: kek, to: secret, keychainID: id),
                       device: KeychainEngine.bind(device: device, to: secret, keychainID: id), sealed: sealed)
        } catch {
            engine.tpmSecret = nil
            throw error
        }
        return true
    }

    /// Frees the keychain from the TPM (`settings --no-tpm`): checks
    /// `password` (through the TPM, which must still be this one), then
    /// re-wraps the keybag for the password's KEK and the device key alone
    /// and removes the sealed secret, in one write transaction. The file
    /// then opens on another machine with the password, as any keychain.
    /// Returns false when the keychain was not bound (nothing changes).
    @discardableResult
    public func unbindFromTPM(password: SecureBytes) throws -> Bool {
        try engine.requireOwner("freeing the keychain from the TPM")
        try engine.require(.settings)
        guard engine.isTPMBound, let kdf = engine.keybag.kdf else { return false }
        let (_, keys, presence, device) = try openEverything(password)
        // The password's own KEK, without T (its hash again: this is rare, and the check above is the one that counts).
        try rewrap(keys, presence, kek: PasswordHash.deriveKEK(password: password, parameters: kdf), device: device, sealed: nil)
        engine.tpmSecret = nil
        return true
    }

    /// Every key `password` and this device's key open: the class keys, the
    /// blind-index key, the presence keys; with the KEK as the keybag has it
    /// now (T mixed in when bound) and the plain device key.
    private func openEverything(_ password: SecureBytes) throws
        -> (kek: SecureBytes, keys: SessionKeys, presence: [(String, SecureBytes)], device: SecureBytes) {
        let checked = try checkPassword(password)
        guard let plain = engine.device, let device = try engine.keybagDevice(), engine.isBoundDevice(device) else {
            throw KeychainError(.notAvailable, "the keychain's TPM binding can only change on the device it was last unlocked on: unlock it here first")
        }
        var keys = checked.keys
        for (name, key) in engine.keybag.unwrapWithDevice(device).entries where keys[name] == nil { keys.set(name, key) }
        var presence: [(String, SecureBytes)] = []
        for name in PresenceKeys.names {
            // A row left wrapped for an older password opens nothing now; it is dropped, as a password change drops it.
            if let key = try? engine.keybag.unwrapPresence(name, kek: checked.kek) { presence.append((name, key)) }
        }
        return (checked.kek, keys, presence, plain)
    }

    /// Writes the keybag wrapped anew for `kek` and `device`, the sealed
    /// secret (or its removal) and the device fingerprint, in one write
    /// transaction; then keeps the keys after first unlock (the password
    /// was just given) so later commands need no TPM.
    private func rewrap(_ keys: SessionKeys, _ presence: [(String, SecureBytes)], kek: SecureBytes, device: SecureBytes,
                        sealed: [UInt8]?) throws {
        let id = engine.keybag.keychainID
        var bag = Keybag(keychainID: id, kdf: engine.keybag.kdf, rows: [:])
        try bag.wrap(keys, kek: kek, device: device)
        for (name, key) in presence { try bag.wrapPresence(name, key, kek: kek) }
        let fingerprint = Keybag.deviceFingerprint(device, keychainID: id)
        try engine.write {
            try engine.storage.writeKeybag(bag, replacingAll: true)
            try engine.storage.writeMeta([(.deviceFingerprint, fingerprint)])
            if let sealed { try engine.storage.writeMeta([(.tpm, sealed)]) } else { try engine.storage.removeMeta(.tpm) }
        }
        engine.keybag = bag
        let tiers = engine.sessionScope != nil ? ProtectionClass.Tiers.none : engine.cache.unlockedTiers.intersection(.session)
        try engine.saveSession(keys, timeout: engine.defaultTimeout, tiers: tiers.union(ProtectionClass.Tiers(.afterFirstUnlock)))
        try engine.reloadKeys()
    }

    /// What binding to a TPM needs of a keychain, at init and in settings.
    static func checkTPMBinding(policy: StoragePolicy, hasPassword: Bool, address: String) throws {
        guard policy.wrapsKeysForDevice else {
            throw KeychainError(.param, "\(address) can't be bound to this machine's TPM: a remote keychain's devices have keys of their own")
        }
        guard hasPassword else {
            throw KeychainError(.param, "a keychain bound to the TPM needs a password: without one the TPM alone would guard it, and every command would start the TPM's helper")
        }
    }
}
