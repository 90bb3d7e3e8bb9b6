import LocketSupport

/// The keys this process holds: loaded from the session at open, saved at
/// unlock, and bound to this device (a copied keychain, a lost device secret).
extension KeychainEngine {
    /// Keys available to this process, by class code (and `idx`).
    /// Without a password, the class keys not used yet may still be wrapped
    /// (`KeyCache.wrapped`): items are opened through `cache`.
    var keys: SessionKeys {
        get { cache.keys }
        set {
            cache.keys = newValue
            cache.wrapped = nil
        }
    }

    /// Set when the session was unlocked for an app: only that app's groups open.
    var sessionScope: KeyCache.Scope? { cache.scope }

    /// The blind-index key; without it nothing can be looked up.
    func indexKey() throws -> SecureBytes { try cache.indexKey() }

    /// Whether items of `pclass` in `group` can be opened now, and if not why.
    func availability(of pclass: ProtectionClass, group: String, id: Int64? = nil) -> Item.Availability {
        // A key still wrapped is tried first, so that one that does not open
        // is unavailable here as it was when keys were opened at open (an
        // altered one fails the command that opens an item of its class).
        if cache.wrapped != nil { try? cache.unwrap(pclass) }
        return cache.availability(of: pclass, group: group, id: id)
    }

    func unavailable(_ pclass: ProtectionClass, _ group: String, id: Int64? = nil) -> KeychainError {
        cache.unavailable(pclass, group, id: id)
    }

    /// Loads the keys this process may use: the device-wrapped ones, then each
    /// session tier (or, without a password, everything). At open, with
    /// `deferring`, keys of the keybag a lookup may not need are left
    /// wrapped (`KeyCache.wrapped`): with a password, the device's `always`
    /// keys; without one, every class key where `loadIndexKeyOnly` says so.
    func loadKeys(deferring: Bool = false) throws {
        // Through `cache` directly: the `keys` accessor would copy the set at every change.
        defer { extendsSession = true }
        if device == nil { device = try deviceKey() }
        if deferring && !keybag.hasPassword, try loadIndexKeyOnly() { return }
        // Without a password the KEK below opens every class key it wraps:
        // the device opens only the rest here (always-this-device-only).
        // A TPM-bound keychain (always one with a password) has its
        // device-wrapped keys from the session when it has them (no TPM for
        // `find`), else through the TPM below.
        let bound = isTPMBound
        if let device, !bound {
            if deferring && keybag.hasPassword {
                // The blind-index key now (the header's check needs it),
                // `always` and always-this-device-only when an item of
                // theirs is opened. A device wrap that does not open was
                // never a refusal (the key is another device's, or the
                // device secret was replaced): it stays out either way.
                if let indexKey = try? keybag.unwrap(Keybag.indexKeyName, kek: nil, device: device) {
                    cache.keys.set(Keybag.indexKeyName, indexKey)
                }
                cache.wrapped = KeyCache.WrappedKeys(keybag: keybag, kek: nil, device: device)
            } else {
                cache.keys = keybag.unwrapWithDevice(device, besidesKEK: !keybag.hasPassword)
            }
        }
        if !keybag.hasPassword {
            var all: SessionKeys
            do {
                all = try keybag.unwrapWithKEK(Keybag.passwordlessKEK(keybag.keychainID), device: device)
            } catch let error as KeychainError where error.code == .authFailed {
                // No password parameters, yet keys that need a password: the header was edited.
                throw KeychainError(.decode, "\(path) has lost its password-hash parameters; the file was altered")
            }
            if let device, !isBoundDevice(device) {
                // Writes below authenticate the header with the blind-index key.
                if let indexKey = all[Keybag.indexKeyName] { cache.keys.set(Keybag.indexKeyName, indexKey) }
                try rebind(&all, kek: Keybag.passwordlessKEK(keybag.keychainID), device: device)
                try rewrapForThisDevice(all, device: device)
            }
            for (name, key) in all.entries { cache.keys.set(name, key) }
            cache.unlockedTiers = .all
            return
        }
        // Two calls, not a loop over an array of tiers (its metadata is built
        // at run time, by every command that opens a keychain).
        var directory = session.sessionDirectory()
        try loadSession(.afterFirstUnlock, &directory)
        try loadSession(.whenUnlocked, &directory)
        if bound && unsealsForDeviceKeys { try loadDeviceKeysThroughTPM() }
    }

    /// At open, a keychain without a password whose header carries a MAC,
    /// on the device its keys are bound to: the blind-index key alone is
    /// opened, and the class keys when an item of their class is first
    /// opened (a lookup needs one of the keybag's six or seven; opening
    /// them all was ~40 k of a `find`'s ~1,000 k instructions). What this
    /// does not change: `open` checks the header's MAC with this key before
    /// anything else, and the MAC covers every keybag row (`Header.mac`),
    /// so a row changed by anyone without the blind-index key fails every
    /// command at open, as before. Whoever holds that key (for a keychain
    /// without a password, anyone who can read the file) can write a
    /// header that verifies, but could as well wrap keys of its own that
    /// open; a migratable class's key that does not open is still
    /// errSecDecode, for the command that needs it (`KeyCache.classKey`).
    /// False where everything is opened at once: a header without a MAC,
    /// one the storage checked, another device's keys, a blind-index key
    /// that does not open (its errors are those of the whole keybag).
    private func loadIndexKeyOnly() throws -> Bool {
        guard let device, meta[Header.macName] != nil, !headerChecked, isBoundDevice(device) else { return false }
        let kek = try Keybag.passwordlessKEK(keybag.keychainID)
        guard let indexKey = try? keybag.unwrap(Keybag.indexKeyName, kek: kek, device: device) else { return false }
        cache.keys.set(Keybag.indexKeyName, indexKey)
        cache.wrapped = KeyCache.WrappedKeys(keybag: keybag, kek: kek, device: device)
        cache.unlockedTiers = .all
        return true
    }

    /// Loads the session's keys of `tier`, if any, into the cache.
    private func loadSession(_ tier: ProtectionClass.Tier, _ directory: inout SessionStore.Directory) throws {
        // Unpacked at once: an optional tuple held in a variable has its
        // type metadata built at run time.
        let stored: SessionKeys
        do {
            guard let (keys, _) = try session.load(tier, extend: extendsSession, directory: &directory) else { return }
            stored = keys
        } catch let error as KeychainError where error.code == .decode {
            // A damaged session (a crash mid-write, a race with lock, tampering)
            // is a locked one: forget it rather than block every command.
            session.remove(tier)
            return
        }
        cache.unlockedTiers.insert(tier)
        for (name, key) in stored.entries where cache.keys[name] == nil { cache.keys.set(name, key) }
        if let scope = stored.scope {
            var merged = cache.scope ?? KeyCache.Scope(groups: [], classes: [])
            for group in scope.groups where !merged.groups.contains(group) { merged.groups.append(group) }
            merged.classes.formUnion(scope.classes)
            cache.scope = merged
        }
    }

    /// Reloads this object's keys after the session changed under it;
    /// `throughTPM` false leaves a bound keychain's device-wrapped keys
    /// unloaded when the session no longer has them (`lock` starts no helper).
    func reloadKeys(throughTPM: Bool = true) throws {
        cache.reset()
        // The kept mirror holds the index and device keys it was made from and
        // a key derived from them: a lock must not leave them in memory.
        madeMirror = nil
        cache.thisDeviceOnlyBoundary = tdoBoundary
        unsealsForDeviceKeys = throughTPM
        defer { unsealsForDeviceKeys = true }
        try loadKeys()
    }

    /// Saves the keys for later commands: both tiers, or only those in `tiers`.
    /// What an app's unlock keeps is SessionPolicy's call.
    func saveSession(_ unwrapped: SessionKeys, timeout: UInt32,
                     tiers: ProtectionClass.Tiers = .session) throws {
        var (firstUnlock, whenUnlocked) = try SessionPolicy.split(unwrapped, accessGroups: caller.accessGroups,
                                                              keychainID: keybag.keychainID)
        // New at every unlock and gone at lock: a presence reuse window (SPEC §14) never outlives the unlock it began in.
        // The owner's only: an app's session holds its group keys and nothing else.
        if caller.accessGroups == nil { whenUnlocked.set(PresenceKeys.reuseNonceName, try SecureBytes(copying: Sodium.random(32))) }
        if tiers.contains(.afterFirstUnlock) { try session.save(.afterFirstUnlock, keys: firstUnlock, timeout: 0) }
        if tiers.contains(.whenUnlocked) { try session.save(.whenUnlocked, keys: whenUnlocked, timeout: timeout) }
    }

    // MARK: - Binding to this device

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
}
