import LocketSupport

/// What a caller that keeps a `Keychain` open across many calls needs (the
/// Security module, SPEC §19), where the command line opens one per command:
/// seeing when another process locked, unlocked or let the session expire,
/// and answering a search again from the rows it read, while the keychain is
/// unchanged, without opening it and parsing its schema again (two thirds of
/// a search's cost).
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
        return session.fingerprint(key: keybag.keychainID, serials: &probe.serials)
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
    /// `searchAgain` answers the same search while the keychain is
    /// unchanged. An empty `items` is a miss (errSecItemNotFound to the
    /// caller), held too. `held` is nil where a search can't be answered
    /// again this way: where the storage's rows may not be held
    /// (`StoragePolicy.rowsMayBeHeld`), and a key's value (refused or not by
    /// its extractability before it is opened).
    public func searchHolding(_ query: Query, limit: MatchLimit = .one, returnData: Bool = false) throws -> (items: [Item], held: HeldSearch?) {
        guard storage.policy.rowsMayBeHeld, !(returnData && query.itemClass == .key) else {
            do {
                return (try search(query, limit: limit, returnData: returnData), nil)
            } catch let error as KeychainError where error.code == .itemNotFound {
                return ([], nil)
            }
        }
        if case .count(let n) = limit, n < 1 { throw KeychainError(.param, "the match limit must be at least 1") }
        let held = HeldRows(keepingData: returnData)
        let found = try transaction(write: false) { try rows(query, limit: limit, data: returnData, reads: true, holding: held) }
        return (found, HeldSearch(query: query, limit: limit, returnData: returnData, rows: held.rows))
    }

    /// The items `held` gives with the keys and proofs this object holds
    /// now: what `search` would find in the keychain `held` was read from,
    /// row for row, through the same row scan (a class locked since fails as
    /// it would, with errSecInteractionNotAllowed; an item with access
    /// control asks for its proof). The caller vouches that the keychain is
    /// unchanged since.
    public func searchAgain(_ held: HeldSearch) throws -> [Item] {
        // As the lookup: without the blind-index key nothing can be looked up.
        if !held.query.attributes.isEmpty || held.query.hasFreeForm { _ = try indexKey() }
        var found: [Item] = []
        let wanted = held.limit.sqlLimit
        try run(RowScan(held.query, filter: ItemFilter(), data: held.returnData), rows: HeldRows.Cursor(held.rows)) { match in
            found.append(match.item)
            return wanted < 0 || found.count < wanted
        }
        return found
    }
}

/// The rows a search read, as the keychain holds them (`Keychain.searchHolding`).
public struct HeldSearch: Sendable {
    let query: Query
    let limit: MatchLimit
    let returnData: Bool
    let rows: [Row]

    /// One selected row, copied out of the storage: sealed values only.
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

/// Where a row scan copies every row it selects, before opening it
/// (`RowScan.holding`): what `searchAgain` scans again.
final class HeldRows {
    let keepingData: Bool
    private(set) var rows: [HeldSearch.Row] = []

    init(keepingData: Bool) { self.keepingData = keepingData }

    func hold(_ row: some StoredItemRow) {
        rows.append(HeldSearch.Row(id: row.id, ref: row.ref, itemClass: row.itemClass, protectionClassCode: row.protectionClassCode,
                                   accessGroup: row.accessGroup, attributes: row.withAttributes { Array($0) },
                                   data: keepingData ? row.withData { Array($0) } : []))
    }

    /// Held rows as a row scan reads them.
    final class Cursor: ItemCursor {
        private let rows: [HeldSearch.Row]
        private var position = 0

        init(_ rows: [HeldSearch.Row]) { self.rows = rows }

        func next() throws -> HeldSearch.Row? {
            guard position < rows.count else { return nil }
            defer { position += 1 }
            return rows[position]
        }
    }
}

/// Where a keychain's session records were found, kept by the caller of
/// `Keychain.sessionFingerprint` between calls.
public final class SessionProbe: @unchecked Sendable {
    var serials: [String: Int32] = [:]

    public init() {}
}
