import Glibc
import LocketSupport

/// Unlock, password changes and the wrong-password counter.
extension Keychain {
    // MARK: - Unlock

    /// Unlocks with `password` until `lock`, a reboot, or `timeout` seconds
    /// without use (0: no auto-lock). After repeated wrong passwords it first
    /// waits out `passwordDelayMilliseconds`.
    public func unlock(password: SecureBytes, timeout: UInt32?) throws {
        guard keybag.hasPassword else { return }
        try unlock(checked: try checkPassword(password), timeout: timeout)
    }

    /// An unlock in two steps, for a caller that may change its mind while
    /// the password is hashed (a Secret Service prompt dismissed meanwhile):
    /// `verify` does the costly part and counts a wrong password as `unlock`
    /// does; nothing is unlocked until `unlock(verified:)`. nil: the keychain
    /// has no password, nothing to unlock.
    public func verify(password: SecureBytes) throws -> VerifiedPassword? {
        guard keybag.hasPassword else { return nil }
        let checked = try checkPassword(password)
        return VerifiedPassword(kek: checked.kek, keys: checked.keys)
    }

    /// Unlocks with what `verify(password:)` accepted (no second hash).
    public func unlock(verified: VerifiedPassword, timeout: UInt32?) throws {
        try unlock(checked: (verified.kek, verified.keys), timeout: timeout)
    }

    /// Unlocks with a password `checkPassword` accepted (restore reuses its
    /// check rather than hash the password twice).
    func unlock(checked: (kek: SecureBytes, keys: SessionKeys), timeout: UInt32?) throws {
        var unwrapped = checked.keys
        if storage.policy.wrapsKeysForDevice {
            if device == nil {
                // A lost device secret: make a new one. Device-bound items of the
                // old one stay unreadable, as after restoring a phone from backup.
                try DeviceKey.create(secretPath: environment.deviceSecretPath())
                device = try deviceKey()
            }
            if let device, !isBoundDevice(device) {
                try rebind(&unwrapped, kek: checked.kek, device: device)
            }
            try rewrapForThisDevice(unwrapped, device: device)
        }
        // Elsewhere nothing is written, and no key is wrapped for this device:
        // the keys the password opens go to this machine's session only.
        try saveSession(unwrapped, timeout: timeout ?? defaultTimeout)
        try reloadKeys()
    }

    /// Whether `device` is the device the keychain's device-bound keys belong to.
    func isBoundDevice(_ device: SecureBytes?) -> Bool {
        guard let device, let stored = meta[.deviceFingerprint] else { return false }
        return Keybag.deviceFingerprint(device, keychainID: keybag.keychainID) == stored
    }

    /// The first unlock on a new device (a copied keychain, a lost device
    /// secret): fresh device-bound class keys for this device, so that new
    /// ThisDeviceOnly items work here. Items bound to the old device keep their
    /// old keys, which never open here; `tdo_boundary` (ids never repeat)
    /// tells them apart, so they show as unavailable on this device, not damaged.
    func rebind(_ unwrapped: inout SessionKeys, kek: SecureBytes, device: SecureBytes) throws {
        var fresh = SessionKeys()
        for name in keybag.deviceBoundNames { fresh.set(name, try SecureBytes(copying: Sodium.random(32))) }
        var bag = keybag
        try bag.wrap(fresh, kek: kek, device: device)
        let fingerprint = Keybag.deviceFingerprint(device, keychainID: keybag.keychainID)
        let boundary: Int64 = try write {
            let boundary = max(try storage.itemStore.maximumID(), tdoBoundary)
            try storage.writeKeybag(bag, replacingAll: false)
            try storage.writeMeta([(.deviceFingerprint, fingerprint), (.thisDeviceOnlyBoundary, BigEndian.bytes(boundary))])
            return boundary
        }
        keybag = bag
        meta[.deviceFingerprint] = fingerprint
        meta[.thisDeviceOnlyBoundary] = BigEndian.bytes(boundary)
        for (name, key) in fresh.entries { unwrapped.set(name, key) }
    }

    /// Device-bound items with ids up to this one belong to an earlier device.
    var tdoBoundary: Int64 { meta.integer(.thisDeviceOnlyBoundary) ?? 0 }

    /// Re-wraps the always-available keys for this device's key when they came
    /// from elsewhere (a copied keychain, a lost device secret).
    func rewrapForThisDevice(_ unwrapped: SessionKeys, device: SecureBytes?) throws {
        guard let device else { return }
        let current = keybag.unwrapWithDevice(device)
        var missing = SessionKeys()
        for name in [ProtectionClass.always.rawValue, Keybag.indexKeyName] where current[name] == nil {
            if let key = unwrapped[name] { missing.set(name, key) }
        }
        guard !missing.entries.isEmpty else { return }
        var bag = keybag
        try bag.wrap(missing, kek: nil, device: device)
        try write { try storage.writeKeybag(bag, replacingAll: false) }
        keybag = bag
    }

    // MARK: - Password

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
        try requireOwner("changing the password")
        try require(.changePassword)
        if rotate { try require(.rotateKeys) }
        if let new, new.count == 0 { throw KeychainError(.param, "the new password is empty", reason: .emptyPassword) }
        if new == nil && !hasPassword { throw KeychainError(.param, "the keychain has no password to remove") }
        if new == nil && rotate { throw KeychainError(.param, "rotating the keys needs a new password") }
        let checked = try checkPassword(old)
        var keys = checked.keys
        let (presence, publicKeys) = try presenceForNewPassword(kek: checked.kek, removing: new == nil)
        proof.presenceKeys = [:]

        let passcodeName = ProtectionClass.whenPasscodeSetThisDeviceOnly.rawValue
        var kdf: KDFParameters?
        let newKEK: SecureBytes
        if let new {
            kdf = KDFParameters(cost: cost ?? keybag.kdf?.cost ?? .moderate)
            newKEK = try PasswordHash.deriveKEK(password: new, parameters: kdf!)
            if keys[passcodeName] == nil && keybag.rows[passcodeName] == nil {
                keys.set(passcodeName, try SecureBytes(copying: Sodium.random(32)))
            }
        } else {
            newKEK = try Keybag.passwordlessKEK(keybag.keychainID)
        }
        if rotate {
            try rotateKeys(old: keys, kdf: kdf!, kek: newKEK, presence: presence, publicKeys: publicKeys)
            return 0
        }
        var bag = Keybag(keychainID: keybag.keychainID, kdf: kdf, rows: keybag.rows)
        try bag.wrap(keys, kek: newKEK, device: device)
        for (name, key) in presence { try bag.wrapPresence(name, key, kek: newKEK) }
        let removed: Int = try write {
            var removed = 0
            try storage.writeMeta(publicKeys)
            if new == nil {
                for name in PresenceKeys.names where bag.rows[name] != nil {
                    try storage.removeKeybagRow(name)
                    try storage.removeMeta(PresenceKeys.publicKeyRow(name))
                    bag.removeRow(name)
                }
                removed = try storage.itemStore.delete(ItemFilter(protectionClass: .whenPasscodeSetThisDeviceOnly))
                try storage.removeKeybagRow(passcodeName)
                try storage.removeMeta(.kdf)
                bag.removeRow(passcodeName)
            } else {
                try storage.writeMeta([(.kdf, kdf!.encoded)])
            }
            try storage.writeKeybag(bag, replacingAll: false)
            return removed
        }
        let hadPassword = keybag.hasPassword
        keybag = bag
        if new == nil {
            // Nothing left to unlock: the session's copies are redundant.
            lock(all: true)
        } else if !hadPassword {
            // Setting a first password leaves the keychain unlocked, as init does
            // (and as iOS does after a passcode is set).
            try saveSession(keys, timeout: defaultTimeout)
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
        if let key = try? keybag.unwrapPresence(PresenceKeys.presenceName, kek: kek) { keys.append((PresenceKeys.presenceName, key)) }
        if keybag.rows[PresenceKeys.currentSetName] != nil {
            let (publicKey, secretKey) = try PresenceKeys.generate()
            keys.append((PresenceKeys.currentSetName, secretKey))
            publicKeys.append((.currentSetPublicKey, publicKey))
        }
        return (keys, publicKeys)
    }
}
