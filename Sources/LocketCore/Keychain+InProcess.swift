import CSodium
import LocketSupport

/// What a caller that keeps a `Keychain` open across many calls needs (the
/// Security module, SPEC §19), where the command line opens one per command:
/// seeing when another process locked, unlocked or let the session expire,
/// and answering a search again from the rows it read, while the file is
/// unchanged, without opening the file and parsing its schema again (two
/// thirds of a search's cost).
extension Keychain {
    /// A digest of the session's records for this keychain now (both tiers,
    /// keyed by the keychain's identity): it changes when another process
    /// unlocks, locks or lets the session expire, and not when a use is
    /// stamped. `probe` remembers where the records are between calls (a
    /// keyring record is then one system call to read). With `extend`, the
    /// session's inactivity timeout restarts, as a command's use restarts
    /// it. Empty for a keychain without a password (no session).
    public func sessionFingerprint(extend: Bool, probe: SessionProbe) -> [UInt8] {
        guard keybag.hasPassword else { return [] }
        if extend {
            // What a command's opening does (a damaged session is left to the next opening).
            _ = try? session.load(.afterFirstUnlock, extend: true)
            _ = try? session.load(.whenUnlocked, extend: true)
        }
        // libsodium's state is opaque to Swift: its size comes from the library.
        let memory = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        defer {
            sodium_memzero(memory, crypto_generichash_statebytes())
            memory.deallocate()
        }
        let state = OpaquePointer(memory)
        keybag.keychainID.withUnsafeBytes { id in
            _ = crypto_generichash_init(state, id.baseAddress!.assumingMemoryBound(to: UInt8.self), id.count, 16)
        }
        func absorb(_ bytes: UnsafeRawBufferPointer) {
            var length = UInt32(bytes.count).bigEndian
            withUnsafeBytes(of: &length) { _ = crypto_generichash_update(state, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), 4) }
            if let base = bytes.baseAddress { _ = crypto_generichash_update(state, base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count)) }
        }
        for tier in [ProtectionClass.Tier.afterFirstUnlock, .whenUnlocked] {
            if let record = session.currentRecord(tier, serials: &probe.serials) {
                record.withUnsafeBytes { absorb($0) }
            } else {
                absorb(UnsafeRawBufferPointer(start: nil, count: 0))
            }
        }
        var out = [UInt8](repeating: 0, count: 16)
        out.withUnsafeMutableBytes { _ = crypto_generichash_final(state, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), 16) }
        return out
    }

    /// Loads the session's keys again, as at open, and returns the session's
    /// fingerprint as it was just before: a later fingerprint that differs
    /// means these keys may be out of date (a change in between is seen as
    /// one, never missed).
    public func reloadSession(extend: Bool, probe: SessionProbe) throws -> [UInt8] {
        let fingerprint = sessionFingerprint(extend: extend, probe: probe)
        extendsSession = false
        try reloadKeys()
        return fingerprint
    }

    /// `search`, also giving back the rows it read (`HeldSearch`: sealed
    /// values and row identities, no secret in the clear), from which
    /// `searchAgain` answers the same search while the keychain's file is
    /// unchanged. An empty `items` is a miss (errSecItemNotFound to the
    /// caller), held too. `held` is nil where a search can't be answered
    /// again this way: a remote keychain, and a key's value (refused or not
    /// by its extractability before it is opened).
    public func searchHolding(_ query: Query, limit: MatchLimit = .one, returnData: Bool = false) throws -> (items: [Item], held: HeldSearch?) {
        guard case .file(let database) = backend, !(returnData && query.itemClass == .key) else {
            do {
                return (try search(query, limit: limit, returnData: returnData), nil)
            } catch let error as KeychainError where error.code == .itemNotFound {
                return ([], nil)
            }
        }
        if case .count(let n) = limit, n < 1 { throw KeychainError(.param, "the match limit must be at least 1") }
        var held: [HeldSearch.Row] = []
        let found = try transaction(write: false) { () throws -> [Item] in
            try refreshFormat()
            let cursor = try ItemStore(database: database, format: format).select(try storeFilter(query), data: returnData)
            var found: [Item] = []
            while let row = try cursor.next() {
                held.append(HeldSearch.Row(id: row.id, ref: row.ref, itemClass: row.itemClass, protectionClassCode: row.protectionClassCode,
                                           accessGroup: row.accessGroup, attributes: row.withAttributes { Array($0) },
                                           data: returnData ? row.withData { Array($0) } : []))
                guard let item = try open(row, itemClass: query.itemClass, data: returnData, strict: true),
                      query.attributes.allSatisfy({ item[$0.0] == $0.1 }) else { continue }
                found.append(item)
                if limit.sqlLimit >= 0 && found.count >= limit.sqlLimit { break }
            }
            if found.isEmpty { try checkKeysCurrent() }
            return found
        }
        return (found, HeldSearch(query: query, limit: limit, returnData: returnData, rows: held))
    }

    /// The items `held` gives with the keys and proofs this object holds
    /// now: what `search` would find in the file `held` was read from, row
    /// for row (a class locked since fails as it would, with
    /// errSecInteractionNotAllowed; an item with access control asks for its
    /// proof). The caller vouches that the file is unchanged since.
    public func searchAgain(_ held: HeldSearch) throws -> [Item] {
        // As the lookup: without the blind-index key nothing can be looked up.
        if !held.query.attributes.isEmpty { _ = try indexKey() }
        var found: [Item] = []
        for row in held.rows {
            guard let item = try open(row, itemClass: held.query.itemClass, data: held.returnData, strict: true),
                  held.query.attributes.allSatisfy({ item[$0.0] == $0.1 }) else { continue }
            found.append(item)
            if held.limit.sqlLimit >= 0 && found.count >= held.limit.sqlLimit { break }
        }
        return found
    }
}

/// The rows a search read, as the file holds them (`Keychain.searchHolding`).
public struct HeldSearch: Sendable {
    let query: Query
    let limit: MatchLimit
    let returnData: Bool
    let rows: [Row]

    /// One selected row, copied out of SQLite: sealed values only.
    struct Row: StoredItemRow, Sendable {
        let id: Int64
        let ref: [UInt8]
        let itemClass: ItemClass?
        let protectionClassCode: String
        let accessGroup: String
        let attributes: [UInt8]
        let data: [UInt8]

        func withAttributes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try attributes.withUnsafeBytes(body) }
        func withData<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try data.withUnsafeBytes(body) }
    }

    /// About how many bytes it holds (for bounding a cache of them).
    public var byteCount: Int { rows.reduce(64) { $0 + 64 + $1.ref.count + $1.accessGroup.utf8.count + $1.attributes.count + $1.data.count } }
}

/// Where a keychain's session records were found, kept by the caller of
/// `Keychain.sessionFingerprint` between calls.
public final class SessionProbe: @unchecked Sendable {
    var serials: [String: Int32] = [:]

    public init() {}
}
