import LocketSupport

/// SecItemCopyMatching and dump: finding rows and opening them.
extension Keychain {
    /// Finds items (SecItemCopyMatching): at most one unless `limit` says otherwise.
    public func search(_ query: Query, limit: MatchLimit = .one, returnData: Bool = false) throws -> [Item] {
        if case .count(let n) = limit, n < 1 { throw KeychainError(.param, "the match limit must be at least 1") }
        let found = try transaction(write: false) { try lookUp(query, limit: limit, returnData: returnData) }
        if found.isEmpty { throw storage.noMatch() }
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
        guard storage.policy.readsManyInOneTransaction else {
            return try queries.map { query in try result { try search(query, limit: limit, returnData: returnData) } }
        }
        if case .count(let n) = limit, n < 1 { throw KeychainError(.param, "the match limit must be at least 1") }
        let found = try transaction(write: false) { () throws -> [Result<[Item], KeychainError>] in
            try queries.map { query in try result { try lookUp(query, limit: limit, returnData: returnData) } }
        }
        return found.map { looked in
            if case .success(let items) = looked, items.isEmpty { return .failure(storage.noMatch()) }
            return looked
        }
    }

    /// One query's items, inside the transaction `search` runs: every read
    /// of a secret recorded, a miss checked against a rotation.
    private func lookUp(_ query: Query, limit: MatchLimit, returnData: Bool) throws -> [Item] {
        if returnData && query.itemClass == .key { try refuseNonExtractable(query, limit: limit) }
        return try rows(query, limit: limit, data: returnData, reads: true)
    }

    /// The store filter of a query: the groups the caller may touch, its
    /// protection class, the blind index of each attribute and free-form
    /// equality, and whether synchronizable items are in or out.
    func storeFilter(_ query: Query) throws -> ItemFilter {
        var filter = try self.filter(query)
        guard !query.attributes.isEmpty || query.hasFreeForm || query.matching != .any else { return filter }
        let indexKey = try indexKey()
        if query.hasFreeForm {
            filter.freeForm = query.freeFormNames.indices.map {
                Sealing.freeFormDigest(indexKey, query.itemClass, query.freeFormNames[$0], query.freeFormValues[$0])
            }
        }
        filter.terms = query.attributes.map { attribute, value in
            ItemFilter.Term(attribute: attribute, digest: Sealing.indexDigest(indexKey, query.itemClass, attribute, value),
                             isEmpty: value.isEmpty)
        }
        let given = Dictionary(query.attributes, uniquingKeysWith: { first, _ in first })
        // Once the header says an item unique by reference exists, the whole
        // primary key may name more than one item: the blind rows find them all.
        // The primary key includes whether the item is synchronizable: `.any` names two.
        if query.matching != .any && query.itemClass.primaryKey.allSatisfy({ given[$0] != nil })
            && meta.integer(.uniqueByReference) == nil {
            filter.primaryKey = Sealing.primaryKeyDigest(indexKey, query.itemClass, given, synchronizable: query.matching == .yes)
        }
        switch query.matching {
        case .yes where filter.primaryKey == nil:
            filter.terms.append(ItemFilter.Term(attribute: .synchronizable, digest: Sealing.synchronizableDigest(indexKey, query.itemClass),
                                                isEmpty: false))
        case .no where filter.primaryKey == nil:
            filter.excluded = [Sealing.synchronizableDigest(indexKey, query.itemClass)]
        default:
            break
        }
        return filter
    }

    /// The filter of the one item whose primary key `query` gives in full
    /// (every primary-key attribute and the group): by the primary-key
    /// digest even where items unique by reference exist, since theirs is
    /// of their reference and never equal. So `add -U` and `import -U`
    /// touch the item whose key conflicted, never an item made over the
    /// Secret Service that only shares its service and account.
    func primaryKeyFilter(_ query: Query) throws -> ItemFilter {
        var filter = try storeFilter(query)
        filter.primaryKey = Sealing.primaryKeyDigest(try indexKey(), query.itemClass,
                                                     Dictionary(query.attributes, uniquingKeysWith: { first, _ in first }),
                                                     synchronizable: query.matching == .yes)
        filter.excluded = []
        return filter
    }

    /// Matching items in stable order (oldest first), inside the caller's
    /// transaction. A match whose class key is unavailable fails the whole
    /// search with errSecInteractionNotAllowed: a locked item is never
    /// reported as missing. With `reads`, as a read handed to the caller:
    /// each secret recorded, a miss checked against a rotation. With
    /// `holding`, every row selected is also copied there.
    func rows(_ query: Query, limit: MatchLimit, data: Bool, reads: Bool = false, holding: HeldRows? = nil,
              filter: ItemFilter? = nil) throws -> [Item] {
        var found: [Item] = []
        let wanted = limit.sqlLimit
        let scan = RowScan(query, filter: try filter ?? storeFilter(query), data: data)
        scan.recordingReads = reads && data
        scan.reportingRotation = reads
        scan.holding = holding
        try self.scan(scan) { match in
            found.append(match.item)
            return wanted < 0 || found.count < wanted
        }
        return found
    }

    /// Streams every item, oldest first. Items that cannot be opened come with
    /// their availability set. With `returnData`, a locked class with items
    /// fails the dump up front (errSecInteractionNotAllowed) before anything is streamed.
    public func dump(returnData: Bool, _ body: (Item) throws -> Void) throws {
        try transaction(write: false) {
            try checkKeysCurrent()
            let visible = ItemFilter(visibleGroups: caller.accessGroups)
            if returnData {
                // Fail before streaming anything: every (class, group) present must open.
                for (code, group) in try storage.itemStore.classesAndGroups(visible) {
                    guard let pclass = ProtectionClass(rawValue: code) else { continue }
                    if let groups = storage.deviceGroups, try !groups.canOpen(group: group) { continue }
                    if availability(of: pclass, group: group) == .locked { throw unavailable(pclass, group) }
                }
            }
            let scan = RowScan(every: visible, data: returnData, strict: false)
            // A machine's view leaves out the groups it can't open, as an app's leaves out other apps'.
            scan.listing = true
            // A non-extractable key is listed without its value (SPEC §12).
            scan.withholdingNonExtractable = true
            scan.recordingReads = true
            try self.scan(scan) { match in
                try body(match.item)
                return true
            }
        }
    }
}
