/// What an unlock keeps in the session, per tier (SPEC §6): the owner's
/// unlock keeps the class keys; an app's (`unlock --entitlements`) keeps
/// only that app's (class, group) keys, so that a later command, even one
/// run without entitlements, can open nothing else.
enum SessionPolicy {
    /// The keys to save for the after-first-unlock tier and the when-unlocked tier.
    static func split(_ unwrapped: SessionKeys, accessGroups: [String]?,
                      keychainID: [UInt8]) throws -> (afterFirstUnlock: SessionKeys, whenUnlocked: SessionKeys) {
        var firstUnlock = SessionKeys(), whenUnlocked = SessionKeys()
        guard let groups = accessGroups else {
            for (name, key) in unwrapped.entries {
                switch ProtectionClass(rawValue: name)?.tier {
                case .whenUnlocked?: whenUnlocked.set(name, key)
                case .afterFirstUnlock?, .always?: firstUnlock.set(name, key)
                case nil: firstUnlock.set(name, key); whenUnlocked.set(name, key)
                }
            }
            return (firstUnlock, whenUnlocked)
        }
        var classes: [ProtectionClass.Tier: Set<String>] = [:]
        for (name, classKey) in unwrapped.entries {
            guard let pclass = ProtectionClass(rawValue: name), pclass.tier != .always else {
                // The blind-index key: lookups and deletes only, in every group.
                if name == Keybag.indexKeyName { firstUnlock.set(name, classKey); whenUnlocked.set(name, classKey) }
                continue
            }
            for group in groups {
                let key = try Sealing.groupKey(classKey, keychainID: keychainID, pclass, group)
                let name = KeyCache.scopedKeyName(keychainID: keychainID, pclass, group)
                if pclass.tier == .whenUnlocked { whenUnlocked.set(name, key) } else { firstUnlock.set(name, key) }
            }
            classes[pclass.tier, default: []].insert(name)
        }
        whenUnlocked.scope = SessionKeys.Scope(groups: groups, classes: classes[.whenUnlocked] ?? [])
        firstUnlock.scope = SessionKeys.Scope(groups: groups, classes: classes[.afterFirstUnlock] ?? [])
        return (firstUnlock, whenUnlocked)
    }
}
