import LocketSupport

/// What a caller that keeps a `Keychain` open across many calls needs (the
/// Security module, SPEC §19), where the command line opens one per command:
/// answering a search again from the rows it read, while the keychain is
/// unchanged, without opening it and parsing its schema again (two thirds of
/// a search's cost). What it sees of the session is KeychainSession+InProcess.
extension Keychain {
    /// `search`, also giving back the rows it read (`HeldSearch`: sealed
    /// values and row identities, no secret in the clear), from which
    /// `searchAgain` answers the same search while the keychain is
    /// unchanged. An empty `items` is a miss (errSecItemNotFound to the
    /// caller), held too. `held` is nil where a search can't be answered
    /// again this way: where the storage's rows may not be held
    /// (`StoragePolicy.rowsMayBeHeld`), and a key's value (refused or not by
    /// its extractability before it is opened).
    public func searchHolding(_ query: Query, limit: MatchLimit = .one, returnData: Bool = false) throws -> (items: [Item], held: HeldSearch?) {
        guard engine.storage.policy.rowsMayBeHeld, !(returnData && query.itemClass == .key) else {
            do {
                return (try search(query, limit: limit, returnData: returnData), nil)
            } catch let error as KeychainError where error.code == .itemNotFound {
                return ([], nil)
            }
        }
        if case .count(let n) = limit, n < 1 { throw KeychainError(.param, "the match limit must be at least 1") }
        let held = HeldRows(keepingData: returnData)
        let found = try engine.transaction(write: false) { try engine.rows(query, limit: limit, data: returnData, reads: true, holding: held) }
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
        if !held.query.attributes.isEmpty || held.query.hasFreeForm { _ = try engine.indexKey() }
        var found: [Item] = []
        let wanted = held.limit.sqlLimit
        try engine.run(RowScan(held.query, filter: ItemFilter(), data: held.returnData), rows: HeldRows.Cursor(held.rows)) { match in
            found.append(match.item)
            return wanted < 0 || found.count < wanted
        }
        return found
    }
}
