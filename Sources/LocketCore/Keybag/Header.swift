import LocketSupport

/// The keychain's header: every meta row and every keybag row, and its
/// authentication (SPEC §7 "Rollback").
///
/// `header_mac` is a MAC over every other meta row and every keybag row under
/// a key derived from the blind-index key (`idx`), which opens while locked
/// through the device wrap, and with the password anywhere. It covers the
/// write `generation` (so an older copy can't claim a newer one), the wrapped
/// class keys (so an old keybag can't be pasted under a newer generation: the
/// old password stays dead), the failure counter and the password-hash
/// parameters (so any edit of them is errSecDecode on a device that can check).
/// Someone without `idx` (another account that can write the file, a copy
/// without its password) can't make a header that verifies.
///
/// What it does not cover: the item rows. A header taken from a newer file
/// and pasted onto an older file's items verifies, and brings back the items
/// that were deleted in between (with the newer file's keys, unless a
/// rotation came between). Covering the rows would cost a pass over every
/// item at open.
///
/// A header without `header_mac` was written by a release before it existed
/// (format 1 as released): generation 0, unauthenticated, until the first
/// write, which adds both.
package struct Header {
    static let generationName = MetaKey.generation.rawValue
    static let macName = MetaKey.headerMAC.rawValue
    static let keyCheckName = MetaKey.keyCheck.rawValue

    /// Every meta row, by name.
    package var meta: [String: [UInt8]]
    /// Every keybag row, by class.
    package var keybag: [String: KeybagRow]
    /// How the MAC covers the keybag: as the storage keeps it.
    var layout: Layout = .tables

    /// Where the keybag rows are, as far as the MAC is concerned.
    package enum Layout {
        /// A table of their own, each row with its password wrap and its device wrap.
        case tables
        /// Among the meta rows, as `prefix` + class, the password wrap as the
        /// value: a storage that keeps no device wraps and one table of rows.
        case metaRows(prefix: String)
    }

    package init(meta: [String: [UInt8]], keybag: [String: KeybagRow], layout: Layout = .tables) {
        self.meta = meta
        self.keybag = keybag
        self.layout = layout
    }

    /// The number of committed writes this header has seen; 0 for a header
    /// without a MAC (from before generations, or stripped of its MAC: a
    /// generation nobody can vouch for counts as none).
    var generation: UInt64 {
        guard isAuthenticated, let value = meta[Header.generationName] else { return 0 }
        return BigEndian.value(value)
    }

    /// Whether the header carries a MAC (every header written by this release does).
    var isAuthenticated: Bool { meta[Header.macName] != nil }

    // MARK: - Keys

    /// The key the header's MAC is made with.
    static func macKey(indexKey: SecureBytes, keychainID: [UInt8]) throws -> SecureBytes {
        try KeyDerivation.derive(indexKey, KeyDerivation.Context("locket.header.key.v1").with(keychainID))
    }

    /// A public check value of the blind-index key: a process whose key gives
    /// another value holds keys from before a rotation (or the row was edited).
    static func keyCheck(indexKey: SecureBytes, keychainID: [UInt8]) -> [UInt8] {
        KeyDerivation.digest(indexKey, KeyDerivation.Context("locket.key-check.v1").with(keychainID))
    }

    /// Whether `indexKey` is the key this header was written with (true for a
    /// header from before key checks existed).
    func matches(indexKey: SecureBytes, keychainID: [UInt8]) -> Bool {
        guard let stored = meta[Header.keyCheckName] else { return true }
        let check = Header.keyCheck(indexKey: indexKey, keychainID: keychainID)
        return stored.count == check.count && stored.withUnsafeBytes { a in check.withUnsafeBytes { b in Sodium.equal(a, b) } }
    }

    // MARK: - MAC

    /// The MAC of every row but the MAC itself, in name order.
    func mac(_ key: SecureBytes) throws -> SecureBytes {
        if case .metaRows(let prefix) = layout {
            var rows = Header(meta: meta, keybag: [:])
            for (name, row) in keybag { if let kek = row.kek { rows.meta[prefix + name] = kek } }
            return try rows.mac(key)
        }
        var context = KeyDerivation.Context("locket.header.v1")
        // Room for every field at once: grown row by row, the buffer was copied again and again.
        var size = 16
        for (name, value) in meta { size += 8 + name.utf8.count + value.count }
        for (name, row) in keybag { size += 14 + name.utf8.count + (row.kek?.count ?? 0) + (row.device?.count ?? 0) }
        context.reserve(size)
        let names = meta.keys.filter { $0 != Header.macName }.sorted()
        // The counts first: no row of one table can pass for a row of the other.
        context.append(String(names.count) + "/" + String(keybag.count))
        for name in names {
            context.append(name)
            context.append(meta[name]!)
        }
        for name in keybag.keys.sorted() {
            let row = keybag[name]!
            context.append(name)
            // A one-byte tag tells NULL from an empty blob.
            context.append(tagged: row.kek)
            context.append(tagged: row.device)
        }
        return try KeyDerivation.derive(key, context)
    }

    /// Whether the stored MAC is right for `key`; false when there is none.
    func verify(_ key: SecureBytes) throws -> Bool {
        guard let stored = meta[Header.macName], stored.count == 32 else { return false }
        let expected = try mac(key)
        return expected.withUnsafeBytes { e in stored.withUnsafeBytes { Sodium.equal(e, $0) } }
    }

    /// The rows a write adds to this header: the next generation, the key
    /// check and the MAC over the result.
    func sealed(generation: UInt64, indexKey: SecureBytes, keychainID: [UInt8]) throws -> [(String, [UInt8])] {
        var next = self
        next.meta[Header.generationName] = BigEndian.bytes(Int64(bitPattern: generation))
        next.meta[Header.keyCheckName] = Header.keyCheck(indexKey: indexKey, keychainID: keychainID)
        next.meta[Header.macName] = nil
        let mac = try next.mac(Header.macKey(indexKey: indexKey, keychainID: keychainID)).bytes
        return [(Header.generationName, next.meta[Header.generationName]!), (Header.keyCheckName, next.meta[Header.keyCheckName]!),
                (Header.macName, mac)]
    }
}
