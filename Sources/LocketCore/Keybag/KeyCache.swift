import LocketSupport

/// The keys this process holds, and the one answer to "can items of this
/// (class, group) be opened now, and if not, why": locked, outside a scoped
/// session's groups, or bound to another device.
struct KeyCache {
    let keychainID: [UInt8]
    /// Keys by class code (and `idx`, and scoped group keys by `scopedKeyName`).
    var keys = SessionKeys()
    /// Tiers whose session was found (or that need none).
    var unlockedTiers = ProtectionClass.Tiers(.always)
    /// Set when the session was unlocked for an app: it holds only that
    /// app's (class, group) keys, never class keys.
    var scope: Scope?
    /// Device-bound items with ids up to this one belong to an earlier device.
    var thisDeviceOnlyBoundary: Int64 = 0
    /// Keys of the keybag left wrapped at open and opened when an item of
    /// their class is first met (`KeychainEngine.loadKeys`): without a
    /// password (its header carrying a MAC), every class key, held with the
    /// passwordless KEK, which is no secret (it derives from the keychain's
    /// id alone); with one, the keys the device wraps.
    var wrapped: WrappedKeys?
    private var groupKeys: [String: SecureBytes] = [:]
    private var lastGroupKey: (pclass: ProtectionClass, group: String, key: SecureBytes)?

    /// A class, not a struct: an optional struct of these fields had its
    /// type metadata built at run time to be destroyed (2.8 k of a `find`).
    final class WrappedKeys {
        let keybag: Keybag
        /// nil for a keychain with a password: the device's wraps only.
        let kek: SecureBytes?
        let device: SecureBytes
        /// Classes tried whose key did not open (another device's): out, as
        /// they were when every key was opened at open.
        var failed: [String] = []

        init(keybag: Keybag, kek: SecureBytes?, device: SecureBytes) {
            self.keybag = keybag
            self.kek = kek
            self.device = device
        }

        /// Whether the key `name` is still to be opened: a row the KEK wraps
        /// (without a password) or the device wraps, not tried in vain.
        func mayOpen(_ name: String) -> Bool {
            guard let row = keybag.rows[name], !failed.contains(name) else { return false }
            return (kek != nil && row.kek != nil) || (row.device != nil && Keybag.deviceWrappedNames.contains(name))
        }
    }

    struct Scope: Equatable {
        var groups: [String]
        var classes: Set<String>
    }

    init(keychainID: [UInt8]) { self.keychainID = keychainID }

    /// Forgets every key (before the session is loaded again).
    mutating func reset() {
        self = KeyCache(keychainID: keychainID)
    }

    /// The session key name of a scoped (class, group) key. Group names stay
    /// out of it so that their length never limits the session format.
    static func scopedKeyName(keychainID: [UInt8], _ pclass: ProtectionClass, _ group: String) -> String {
        "g" + Hex.encode(KeyDerivation.digest(id: keychainID, KeyDerivation.Context("locket.scoped.v1").with(pclass.rawValue).with(group)))
    }

    func scopedKeyName(_ pclass: ProtectionClass, _ group: String) -> String {
        KeyCache.scopedKeyName(keychainID: keychainID, pclass, group)
    }

    /// The blind-index key; without it nothing can be looked up.
    func indexKey() throws -> SecureBytes {
        guard let key = keys[Keybag.indexKeyName] else {
            throw KeychainError(.interactionNotAllowed, "the keychain is locked and its device secret is missing",
                                reason: .locked(nil))
        }
        return key
    }

    /// The key for items of `pclass` in `group`, or why there is none: derived
    /// from the class key, or (in a session scoped to an app) stored as is.
    mutating func groupKey(_ pclass: ProtectionClass, _ group: String) throws -> SecureBytes {
        // Rows come in runs of one class and group: skip building and hashing the cache key.
        if let last = lastGroupKey, last.pclass == pclass, last.group == group { return last.key }
        let cacheKey = pclass.rawValue + "\u{0}" + group
        if let key = groupKeys[cacheKey] {
            lastGroupKey = (pclass, group, key)
            return key
        }
        let key: SecureBytes
        if let classKey = try classKey(pclass) {
            key = try Sealing.groupKey(classKey, keychainID: keychainID, pclass, group)
        } else if let scoped = keys[scopedKeyName(pclass, group)] {
            key = scoped
        } else {
            throw unavailable(pclass, group)
        }
        groupKeys[cacheKey] = key
        lastGroupKey = (pclass, group, key)
        return key
    }

    /// Opens the class key of `pclass` now if it is still wrapped.
    mutating func unwrap(_ pclass: ProtectionClass) throws { _ = try classKey(pclass) }

    /// The class key of `pclass`: held, or opened now from `wrapped`. A
    /// migratable class's wrapped key that does not open fails with
    /// errSecDecode, every time it is asked for (the keybag was altered:
    /// before keys were opened as needed, every command failed so at open).
    private mutating func classKey(_ pclass: ProtectionClass) throws -> SecureBytes? {
        if let key = keys[pclass.rawValue] { return key }
        guard let wrapped, wrapped.mayOpen(pclass.rawValue) else { return nil }
        guard let key = try wrapped.keybag.unwrap(pclass.rawValue, kek: wrapped.kek, device: wrapped.device) else {
            // Tried once: a device-bound key that does not open is another device's, and its items say so.
            wrapped.failed.append(pclass.rawValue)
            return nil
        }
        keys.set(pclass.rawValue, key)
        return key
    }

    /// Whether items of `pclass` in `group` (the item `id`, when known) can be opened now.
    func availability(of pclass: ProtectionClass, group: String, id: Int64? = nil) -> Item.Availability {
        if pclass.thisDeviceOnly, let id, id <= thisDeviceOnlyBoundary { return .unavailableOnThisDevice }
        if keys[pclass.rawValue] != nil || wrapped?.mayOpen(pclass.rawValue) == true || keys[scopedKeyName(pclass, group)] != nil {
            return .available
        }
        guard unlockedTiers.contains(pclass.tier) else { return .locked }
        if let scope, scope.classes.contains(pclass.rawValue) { return .locked }
        return pclass.thisDeviceOnly ? .unavailableOnThisDevice : .locked
    }

    /// The error for items of `pclass` in `group` that can't be opened now.
    func unavailable(_ pclass: ProtectionClass, _ group: String, id: Int64? = nil) -> KeychainError {
        if availability(of: pclass, group: group, id: id) == .unavailableOnThisDevice {
            return KeychainError(.interactionNotAllowed, "the item is bound to another device (\(pclass.name))",
                                 reason: .boundToOtherDevice)
        }
        if let scope, unlockedTiers.contains(pclass.tier) {
            return KeychainError(.interactionNotAllowed,
                                 "the session was unlocked for the access groups \(scope.groups.map { Printable.clip($0) }.joined(with: ", ")) only",
                                 reason: .scopedTo(scope.groups))
        }
        return KeychainError(.interactionNotAllowed, "the keychain is locked (\(pclass.name) items need an unlock)",
                             reason: .locked(pclass))
    }
}
