/// `passwd --rotate` (SPEC §7): new class keys and a new blind-index key,
/// every item re-sealed, in one transaction.
extension KeychainSession {
    /// Replaces every class key and the blind-index key with fresh random
    /// ones wrapped for `kek` (the new password's) and this device, and
    /// re-seals every item under them, all in one write transaction: after a
    /// crash either the old password opens the old keys or the new password
    /// opens the new ones. A stolen copy of the file from before, with the old
    /// password, opens nothing written afterwards, and its blind-index key
    /// neither matches the new digests nor authenticates the new header.
    ///
    /// Items that can't be opened here (ThisDeviceOnly items of another
    /// device, damaged rows, an unknown protection class) are left exactly
    /// as they were: never deleted, still listed by `dump` as unavailable or
    /// damaged, still deleted by `--all` and `--ref`; their digests stay those
    /// of the old blind-index key, so attribute queries no longer find them.
    ///
    /// The session's old keys are forgotten before the commit and the new
    /// ones saved after it (for the tiers the owner had unlocked), so a crash
    /// in between leaves the keychain locked, never holding keys that open nothing.
    ///
    /// The presence keys (`presence`, from `changePassword`) are wrapped for
    /// the new password with the rest; items with access control keep their
    /// sealed secrets, which no class key opens (ItemAccess.dataKey).
    func rotateKeys(old unwrapped: SessionKeys, kdf: KDFParameters, kek: SecureBytes,
                    presence: [(String, SecureBytes)] = [], publicKeys: [(MetaKey, [UInt8])] = []) throws {
        guard let device = try engine.keybagDevice(), engine.isBoundDevice(device) else {
            throw KeychainError(.notAvailable, "the keys can only be rotated on the device the keychain was last unlocked on")
        }
        // dku opens with the device key alone; the rest came with the password.
        var old = unwrapped
        for (name, key) in engine.keybag.unwrapWithDevice(device).entries where old[name] == nil { old.set(name, key) }
        var fresh = SessionKeys()
        for name in Keybag.names { fresh.set(name, try SecureBytes(copying: Sodium.random(32))) }
        var bag = Keybag(keychainID: engine.keybag.keychainID, kdf: kdf, rows: [:])
        try bag.wrap(fresh, kek: kek, device: device)
        for (name, key) in presence { try bag.wrapPresence(name, key, kek: kek) }
        let newIndex = fresh[Keybag.indexKeyName]!

        // An app's scoped session is not widened to the owner's keys: it is dropped.
        let tiers: ProtectionClass.Tiers = engine.sessionScope != nil ? .none : engine.cache.unlockedTiers.intersection(.session)
        engine.session.remove(.whenUnlocked)
        engine.session.remove(.afterFirstUnlock)
        try engine.write(rekey: newIndex) {
            try reseal(old: old, new: fresh, newIndex: newIndex, in: engine.storage.itemStore)
            try engine.storage.writeKeybag(bag, replacingAll: true)
            try engine.storage.writeMeta([(.kdf, kdf.encoded)] + publicKeys)
        }
        engine.keybag = bag
        engine.keys = SessionKeys()
        engine.keys.set(Keybag.indexKeyName, newIndex)
        try engine.saveSession(fresh, timeout: engine.defaultTimeout, tiers: tiers)
        try engine.reloadKeys()
    }

    /// Re-seals every row that opens with `old` under `new`, with fresh
    /// digests under `newIndex`; returns how many rows were left as they were.
    @discardableResult
    private func reseal<Store: ItemStoring>(old: SessionKeys, new: SessionKeys, newIndex: SecureBytes, in store: Store) throws -> Int {
        let reader = try store.makeRowReader()
        let updater = try store.makeUpdater()
        var groupKeys: [String: (old: SecureBytes, new: SecureBytes)] = [:]
        var last: Int64 = 0
        var kept = 0
        while true {
            // Ids first, a row at a time after: memory stays flat whatever the secrets' sizes.
            let ids = try store.ids(after: last, limit: 512)
            guard let final = ids.last else { break }
            last = final
            for id in ids {
                guard let stored = try reader.row(id), let itemClass = stored.itemClass,
                      let pclass = ProtectionClass(rawValue: stored.protectionClassCode),
                      !(pclass.thisDeviceOnly && id <= engine.tdoBoundary),
                      let oldClass = old[pclass.rawValue], let newClass = new[pclass.rawValue] else {
                    kept += 1
                    continue
                }
                let row = Sealing.RowIdentity(itemClass: itemClass, accessible: pclass, accessGroup: stored.accessGroup, ref: stored.ref)
                let cacheKey = pclass.rawValue + "\u{0}" + row.accessGroup
                let keychainID = engine.keybag.keychainID
                let keys = try groupKeys[cacheKey]
                    ?? (engine.sealingKey(Sealing.groupKey(oldClass, keychainID: keychainID, pclass, row.accessGroup), group: row.accessGroup),
                        engine.sealingKey(Sealing.groupKey(newClass, keychainID: keychainID, pclass, row.accessGroup), group: row.accessGroup))
                groupKeys[cacheKey] = keys
                let attributes: SecureBytes, sealedData: [UInt8], record: (attributes: [Attribute: [UInt8]], created: Int64, modified: Int64, access: [UInt8]?)
                do {
                    attributes = try stored.withAttributes {
                        try SecretBox.open($0, key: Sealing.fieldKey(keys.old, row, .attributes), what: "attributes")
                    }
                    record = try ItemRecord.decode(attributes)
                    if record.access != nil {
                        // Sealed under the item's own key (ItemAccess.dataKey), which the class key does not change.
                        sealedData = stored.withData { Array($0) }
                    } else {
                        let data = try stored.withData { try SecretBox.open($0, key: Sealing.fieldKey(keys.old, row, .data), what: "a secret") }
                        sealedData = SecretBox.seal(data, key: try Sealing.fieldKey(keys.new, row, .data))
                    }
                } catch let error as KeychainError where error.code == .decode {
                    // Damaged: left as it was, for dump to list and delete to remove.
                    kept += 1
                    continue
                }
                reader.finish()
                try updater.update(id: id, group: row.accessGroup, accessible: pclass,
                                   digests: Sealing.digests(newIndex, itemClass, record.attributes, try ItemRecord.freeForm(attributes), ref: row.ref),
                                   attributes: SecretBox.seal(attributes, key: Sealing.fieldKey(keys.new, row, .attributes)),
                                   data: sealedData)
            }
        }
        return kept
    }
}
