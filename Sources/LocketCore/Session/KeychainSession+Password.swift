import LocketSupport

/// Changing, setting or removing the password.
extension KeychainSession {
    /// Changes, sets (on a keychain without one) or removes (`new` nil) the
    /// password, hashing the new one at `kdf` (nil: the current cost, or
    /// `.moderate` for a first password). Only the class keys are re-wrapped,
    /// in one transaction, so after a crash either the old or the new password
    /// unlocks. Removing the password deletes every when-passcode-set item, as
    /// iOS does; returns how many.
    ///
    /// With `rotate`, every class key and the blind-index key are replaced
    /// and every item is re-sealed (`rotateKeys`), in the same transaction.
    @discardableResult
    public func changePassword(old: SecureBytes?, new: SecureBytes?, kdf cost: KDFCost? = nil, rotate: Bool = false) throws -> Int {
        try engine.requireOwner("changing the password")
        try engine.require(.changePassword)
        if rotate { try engine.require(.rotateKeys) }
        if let new, new.count == 0 { throw KeychainError(.param, "the new password is empty", reason: .emptyPassword) }
        if new == nil && !engine.hasPassword { throw KeychainError(.param, "the keychain has no password to remove") }
        if new == nil && engine.isTPMBound {
            throw KeychainError(.param, "the keychain is bound to the TPM and keeps its password: without one the TPM alone would guard it")
        }
        if new == nil && rotate { throw KeychainError(.param, "rotating the keys needs a new password") }
        let checked = try checkPassword(old)
        var keys = checked.keys
        let (presence, publicKeys) = try presenceForNewPassword(kek: checked.kek, removing: new == nil)
        engine.proof.presenceKeys = [:]

        let passcodeName = ProtectionClass.whenPasscodeSetThisDeviceOnly.rawValue
        var kdf: KDFParameters?
        let newKEK: SecureBytes
        if let new {
            kdf = KDFParameters(cost: cost ?? engine.keybag.kdf?.cost ?? .moderate)
            newKEK = try engine.keybagKEK(PasswordHash.deriveKEK(password: new, parameters: kdf!))
            if keys[passcodeName] == nil && engine.keybag.rows[passcodeName] == nil {
                keys.set(passcodeName, try SecureBytes(copying: Sodium.random(32)))
            }
        } else {
            newKEK = try Keybag.passwordlessKEK(engine.keybag.keychainID)
        }
        if rotate {
            try rotateKeys(old: keys, kdf: kdf!, kek: newKEK, presence: presence, publicKeys: publicKeys)
            return 0
        }
        var bag = Keybag(keychainID: engine.keybag.keychainID, kdf: kdf, rows: engine.keybag.rows)
        try bag.wrap(keys, kek: newKEK, device: engine.keybagDevice())
        for (name, key) in presence { try bag.wrapPresence(name, key, kek: newKEK) }
        let removed: Int = try engine.write {
            var removed = 0
            try engine.storage.writeMeta(publicKeys)
            if new == nil {
                for name in PresenceKeys.names where bag.rows[name] != nil {
                    try engine.storage.removeKeybagRow(name)
                    try engine.storage.removeMeta(PresenceKeys.publicKeyRow(name))
                    bag.removeRow(name)
                }
                removed = try engine.storage.itemStore.delete(ItemFilter(protectionClass: .whenPasscodeSetThisDeviceOnly))
                try engine.storage.removeKeybagRow(passcodeName)
                try engine.storage.removeMeta(.kdf)
                bag.removeRow(passcodeName)
            } else {
                try engine.storage.writeMeta([(.kdf, kdf!.encoded)])
            }
            try engine.storage.writeKeybag(bag, replacingAll: false)
            return removed
        }
        let hadPassword = engine.keybag.hasPassword
        engine.keybag = bag
        if new == nil {
            // Nothing left to unlock: the session's copies are redundant.
            lock(all: true)
        } else if !hadPassword {
            // Setting a first password leaves the keychain unlocked, as init does
            // (and as iOS does after a passcode is set).
            try engine.saveSession(keys, timeout: engine.defaultTimeout)
        }
        return removed
    }

    /// The presence keys (SPEC §14) a password change wraps for the new
    /// password: user-presence's as it is, password-current-set's replaced by
    /// a new pair (its items are invalidated for good), none when the password
    /// is removed. Returns them with the public keys to store.
    private func presenceForNewPassword(kek: SecureBytes, removing: Bool) throws
        -> (keys: [(String, SecureBytes)], publicKeys: [(MetaKey, [UInt8])]) {
        guard !removing else { return ([], []) }
        var keys: [(String, SecureBytes)] = []
        var publicKeys: [(MetaKey, [UInt8])] = []
        // A row left wrapped for an older password (see provePresence) is dropped, never a reason to refuse the change.
        if let key = try? engine.keybag.unwrapPresence(PresenceKeys.presenceName, kek: kek) { keys.append((PresenceKeys.presenceName, key)) }
        if engine.keybag.rows[PresenceKeys.currentSetName] != nil {
            let (publicKey, secretKey) = try PresenceKeys.generate()
            keys.append((PresenceKeys.currentSetName, secretKey))
            publicKeys.append((.currentSetPublicKey, publicKey))
        }
        return (keys, publicKeys)
    }
}
