import LocketSupport

/// A keychain's header as its storage read it at open, checked for a sane
/// identity and format: what the engine needs to make the keychain object.
package struct StoredHeader {
    package var keybag: Keybag
    /// Every meta row (not the keybag's).
    package var meta: [String: [UInt8]]
    /// Not to be authenticated at open: a snapshot this machine sealed
    /// itself (the offline cache, whose age `--max-stale` bounds instead).
    package var checkedByStorage = false

    package init(keybag: Keybag, meta: [String: [UInt8]], checkedByStorage: Bool = false) {
        self.keybag = keybag
        self.meta = meta
        self.checkedByStorage = checkedByStorage
    }
}

/// Opening: the one sequence every keychain goes through once its storage
/// has been reached and has read its header (each backend's own `open`,
/// through `Keychain(opening:...)`).
extension KeychainEngine {
    /// Makes the engine over `storage` for `caller` and loads
    /// whatever keys this machine's session holds. The header is
    /// authenticated and checked against this machine's generation mirror
    /// when the blind-index key is among them; an older one fails with
    /// errSecDecode (reason `.rolledBack`) unless `acceptRollback`, which
    /// opens it with `isRolledBack` set, for `acceptRollback(password:)`.
    /// Whatever the storage holds is let go if this fails.
    @inline(__always)
    static func open(_ storage: any KeychainStorage, _ stored: StoredHeader, caller: Caller, environment: Environment,
                     extendSession: Bool, acceptRollback: Bool) throws -> KeychainEngine {
        do {
            let keychain = try KeychainEngine(storage: storage, caller: caller, environment: environment, keybag: stored.keybag, meta: stored.meta)
            keychain.extendsSession = extendSession
            keychain.acceptsRollback = acceptRollback
            keychain.headerChecked = stored.checkedByStorage
            try keychain.loadKeys(deferring: true)
            if let indexKey = keychain.keys[Keybag.indexKeyName], !keychain.headerChecked {
                try keychain.authenticate(keychain.header, indexKey: indexKey)
            }
            return keychain
        } catch {
            storage.hold?.release()
            throw error
        }
    }

    /// This process's view of the header: the meta and keybag rows as read
    /// at open and changed since, laid out as the storage's MAC covers them.
    var header: Header { Header(meta: meta, keybag: keybag.rows, layout: storage.headerLayout) }
}
