import LocketSupport

/// What a query selects: its store filter (blind-index digests, the groups
/// the caller may see), the one item a full primary key names, and the
/// matching items through the row scan, in the caller's transaction.
extension KeychainEngine {
    /// The store filter of a query: the groups the caller may touch, its
    /// protection class, the blind index of each attribute and free-form
    /// equality, and whether synchronizable items are in or out.
    func storeFilter(_ query: Query) throws -> ItemFilter {
        var filter = try self.filter(query)
        guard !query.attributes.isEmpty || query.hasFreeForm || query.matching != .any else { return filter }
        let indexKey = try indexKey()
        if query.hasFreeForm {
            // The most an item has: a query of more is a mistake, refused as one.
            guard query.freeFormNames.count <= FreeForm.maximumCount else {
                throw KeychainError(.param, "a query names \(query.freeFormNames.count) free-form attributes; the most is \(FreeForm.maximumCount)")
            }
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

    /// errSecDataNotAvailable when a key `query` matches (within `limit`)
    /// was added non-extractable, found with its attributes alone: the proof
    /// its access control needs is never asked for a value that would be
    /// refused anyway.
    func refuseNonExtractable(_ query: Query, limit: MatchLimit) throws {
        for item in try rows(query, limit: limit, data: false, reads: true) { try KeychainKeys.requireExtractable(item) }
    }
}
