/// `passwd --rotate` (SPEC §7): new class keys and a new blind-index key,
/// every item re-sealed, in one transaction.
extension Keychain {
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
    func rotateKeys(old unwrapped: SessionKeys, kdf: KDFParameters, kek: SecureBytes) throws {
        guard let device, isBoundDevice(device) else {
            throw KeychainError(.notAvailable, "the keys can only be rotated on the device the keychain was last unlocked on")
        }
        // dku opens with the device key alone; the rest came with the password.
        var old = unwrapped
        for (name, key) in keybag.unwrapWithDevice(device).entries where old[name] == nil { old.set(name, key) }
        var fresh = SessionKeys()
        for name in Keybag.names { fresh.set(name, SecureBytes(copying: Sodium.random(32))) }
        var bag = Keybag(keychainID: keybag.keychainID, kdf: kdf, rows: [:])
        bag.wrap(fresh, kek: kek, device: device)
        let newIndex = fresh[Keybag.indexKeyName]!

        // An app's scoped session is not widened to the owner's keys: it is dropped.
        let tiers: Set<ProtectionClass.Tier> = sessionScope != nil ? [] : unlockedTiers.intersection([.whenUnlocked, .afterFirstUnlock])
        session.remove(.whenUnlocked)
        session.remove(.afterFirstUnlock)
        try write(rekey: newIndex) {
            try reseal(old: old, new: fresh, newIndex: newIndex)
            try database.execute("DELETE FROM keybag")
            try Keychain.writeKeybag(database, bag)
            try Keychain.writeMeta(database, [("kdf", kdf.encoded)])
        }
        keybag = bag
        keys = SessionKeys()
        keys.set(Keybag.indexKeyName, newIndex)
        try saveSession(fresh, timeout: defaultTimeout, tiers: tiers)
        try reloadKeys()
    }

    /// Re-seals every row that opens with `old` under `new`, with fresh
    /// digests under `newIndex`; returns how many rows were left as they were.
    @discardableResult
    private func reseal(old: SessionKeys, new: SessionKeys, newIndex: SecureBytes) throws -> Int {
        let columns = Keychain.sealedColumns
        let batch = try database.prepare("SELECT id FROM items WHERE id > ? ORDER BY id LIMIT 512")
        let select = try database.prepare("SELECT ref, cls, pdmn, agrp, attrs, data FROM items WHERE id = ?")
        let update = try database.prepare("""
            UPDATE items SET pk = ?, \(columns.map { "\($0.column) = ?" }.joined(with: ", ")), attrs = ?, data = ? WHERE id = ?
            """)
        var groupKeys: [String: (old: SecureBytes, new: SecureBytes)] = [:]
        var last: Int64 = 0
        var kept = 0
        while true {
            // Ids first, a row at a time after: memory stays flat whatever the secrets' sizes.
            batch.reset()
            try batch.bind(1, last)
            var ids: [Int64] = []
            while try batch.step() { ids.append(batch.int64(0)) }
            guard let final = ids.last else { break }
            last = final
            for id in ids {
                select.reset()
                try select.bind(1, id)
                guard try select.step(), let itemClass = ItemClass(rawValue: select.text(1)),
                      let pclass = ProtectionClass(rawValue: select.text(2)),
                      !(pclass.thisDeviceOnly && id <= tdoBoundary),
                      let oldClass = old[pclass.rawValue], let newClass = new[pclass.rawValue] else {
                    kept += 1
                    continue
                }
                let row = RowIdentity(itemClass: itemClass, accessible: pclass, accessGroup: select.text(3), ref: select.blob(0))
                let cacheKey = pclass.rawValue + "\u{0}" + row.accessGroup
                let keys = groupKeys[cacheKey] ?? (Keychain.deriveGroupKey(oldClass, keychainID: keybag.keychainID, pclass, row.accessGroup),
                                                   Keychain.deriveGroupKey(newClass, keychainID: keybag.keychainID, pclass, row.accessGroup))
                groupKeys[cacheKey] = keys
                let attributes: SecureBytes, data: SecureBytes, record: (attributes: [Attribute: [UInt8]], created: Int64, modified: Int64)
                do {
                    attributes = try select.withBlob(4) { try SecretBox.open($0, key: Keychain.fieldKey(keys.old, row, "attrs"), what: "attributes") }
                    data = try select.withBlob(5) { try SecretBox.open($0, key: Keychain.fieldKey(keys.old, row, "data"), what: "a secret") }
                    record = try ItemRecord.decode(attributes)
                } catch let error as KeychainError where error.code == .decode {
                    // Damaged: left as it was, for dump to list and delete to remove.
                    kept += 1
                    continue
                }
                select.reset()
                update.reset()
                try update.bind(1, Keychain.primaryKeyDigest(newIndex, itemClass, record.attributes))
                var i: Int32 = 2
                for attribute in columns {
                    try update.bind(i, Keychain.indexDigest(newIndex, itemClass, attribute, record.attributes[attribute] ?? []))
                    i += 1
                }
                try update.bind(i, SecretBox.seal(attributes, key: Keychain.fieldKey(keys.new, row, "attrs")))
                try update.bind(i + 1, SecretBox.seal(data, key: Keychain.fieldKey(keys.new, row, "data")))
                try update.bind(i + 2, id)
                _ = try update.step()
            }
        }
        return kept
    }
}
