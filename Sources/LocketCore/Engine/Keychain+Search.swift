import LocketSupport

/// SecItemCopyMatching and dump: finding rows and opening them.
extension Keychain {
    /// Finds items (SecItemCopyMatching): at most one unless `limit` says otherwise.
    public func search(_ query: Query, limit: MatchLimit = .one, returnData: Bool = false) throws -> [Item] {
        if case .count(let n) = limit, n < 1 { throw KeychainError(.param, "the match limit must be at least 1") }
        let found = try engine.transaction(write: false) { try lookUp(query, limit: limit, returnData: returnData) }
        if found.isEmpty { throw engine.storage.noMatch() }
        return found
    }

    /// Each query's items, as `search` would find or refuse them. Where the
    /// storage reads many in one transaction (a file), all are looked up in
    /// one: one opening of the file and one parse of its schema for all of
    /// them, where a call per query pays both every time (about 0.47 M
    /// instructions each); `exec` and `inject` resolve their references this
    /// way before anything starts. A query's own failure is its result.
    /// Elsewhere each query runs as `search`, so that a retried transaction
    /// or a lost connection is handled as it is for one.
    public func search(_ queries: [Query], limit: MatchLimit = .one, returnData: Bool = false) throws -> [Result<[Item], KeychainError>] {
        func result(_ body: () throws -> [Item]) throws -> Result<[Item], KeychainError> {
            do { return .success(try body()) } catch let error as KeychainError { return .failure(error) }
        }
        guard engine.storage.policy.readsManyInOneTransaction else {
            return try queries.map { query in try result { try search(query, limit: limit, returnData: returnData) } }
        }
        if case .count(let n) = limit, n < 1 { throw KeychainError(.param, "the match limit must be at least 1") }
        let found = try engine.transaction(write: false) { () throws -> [Result<[Item], KeychainError>] in
            try queries.map { query in try result { try lookUp(query, limit: limit, returnData: returnData) } }
        }
        return found.map { looked in
            if case .success(let items) = looked, items.isEmpty { return .failure(engine.storage.noMatch()) }
            return looked
        }
    }

    /// One query's items, inside the transaction `search` runs: every read
    /// of a secret recorded, a miss checked against a rotation.
    private func lookUp(_ query: Query, limit: MatchLimit, returnData: Bool) throws -> [Item] {
        if returnData && query.itemClass == .key { try engine.refuseNonExtractable(query, limit: limit) }
        return try engine.rows(query, limit: limit, data: returnData, reads: true)
    }

    /// Streams every item, oldest first. Items that cannot be opened come with
    /// their availability set. With `returnData`, a locked class with items
    /// fails the dump up front (errSecInteractionNotAllowed) before anything is streamed.
    public func dump(returnData: Bool, _ body: (Item) throws -> Void) throws {
        try engine.transaction(write: false) {
            try engine.checkKeysCurrent()
            let visible = ItemFilter(visibleGroups: engine.caller.accessGroups)
            if returnData {
                // Fail before streaming anything: every (class, group) present must open.
                for (code, group) in try engine.storage.itemStore.classesAndGroups(visible) {
                    guard let pclass = ProtectionClass(rawValue: code) else { continue }
                    if let groups = engine.storage.deviceGroups, try !groups.canOpen(group: group) { continue }
                    if engine.availability(of: pclass, group: group) == .locked { throw engine.unavailable(pclass, group) }
                }
            }
            let scan = RowScan(every: visible, data: returnData, strict: false)
            // A machine's view leaves out the groups it can't open, as an app's leaves out other apps'.
            scan.listing = true
            // A non-extractable key is listed without its value (SPEC §12).
            scan.withholdingNonExtractable = true
            scan.recordingReads = true
            try engine.scan(scan) { match in
                try body(match.item)
                return true
            }
        }
    }
}
