import LocketSupport

extension Keychain {
    /// Adds every item `next` yields in ONE write transaction, committed only
    /// when `next` returns nil: an error from `next` (a damaged backup) or
    /// from any item adds nothing. An item whose primary key exists is left
    /// alone, or updated with `updateExisting` (its reference and creation
    /// date stay). An item in an access group the caller can't write is
    /// skipped, not an error: an app restores only its own groups. `outcome`
    /// hears each item's fate, in order, for the importer's report; it may
    /// hear it a few items later than `next` gave the item (the rows are
    /// written by a second thread while the next items are sealed).
    public func importItems(updateExisting: Bool, next: () throws -> ImportedItem?,
                            outcome: (ImportedItem, ImportOutcome) throws -> Void) throws {
        // Its items stream from the reader: a retried transaction could not read them again.
        try engine.require(.importItems)
        try engine.write {
            try engine.storage.bulkWrites?.willImport()
            let inserter = try engine.storage.itemStore.makeInserter()
            let writer = InsertPipeline(inserter)
            // Joined before the transaction commits or rolls back, whichever way this ends.
            defer { writer.stop() }
            // Items whose outcome is not told yet, in order: sent to the writer, or already decided.
            var waiting: [(item: ImportedItem, decided: ImportOutcome?)] = []
            var head = 0
            var told = 0
            var markedUniqueByReference = false
            func tellSettled() throws {
                let inserted = writer.inserted
                while head < waiting.count {
                    let (item, decided) = waiting[head]
                    if decided == nil {
                        guard told < inserted else { break }
                        told += 1
                    }
                    head += 1
                    try outcome(item, decided ?? .added)
                }
                if head >= 256 {
                    waiting.removeFirst(head)
                    head = 0
                }
            }
            // The writer stopped on the first item not yet told: a duplicate is
            // resolved here (the writer is idle), anything else ends the import.
            func settle(_ failure: (error: any Error, rest: [SealedItemRow])) throws {
                try tellSettled()
                guard let error = failure.error as? KeychainError, error.code == .duplicateItem else { throw failure.error }
                let item = waiting[head].item
                head += 1
                try outcome(item, try resolveDuplicate(item, updateExisting: updateExisting, using: inserter))
                writer.resume(failure.rest)
            }
            while let item = try next() {
                try engine.checkSize(item.data)
                let group = item.accessGroup ?? defaultGroup
                if let allowed = engine.caller.accessGroups, !allowed.contains(group) {
                    waiting.append((item, .notPermitted))
                    try tellSettled()
                    // A long run of them behind a row still queued: wait for it, so that what is held stays bounded.
                    if waiting.count - head > 512 {
                        while let failure = writer.drain() { try settle(failure) }
                        try tellSettled()
                    }
                    continue
                }
                try engine.authorize(group)
                try engine.checkFreeForm(item.freeForm)
                if item.freeForm.uniqueByReference && !markedUniqueByReference {
                    // The header row is written here, on the importing thread: the
                    // writer must be idle first (the connection is one thread's at a time).
                    while let failure = writer.drain() { try settle(failure) }
                    try engine.markUniqueByReference()
                    markedUniqueByReference = true
                }
                let row = try engine.seal(item.itemClass, item.attributes, group: group, pclass: item.accessible ?? .whenUnlocked,
                                   data: item.data, extra: item.extra, ref: item.persistentRef,
                                   created: item.creationDate, modified: item.modificationDate, freeForm: item.freeForm)
                waiting.append((item, nil))
                while !writer.submit(row) {
                    if let failure = writer.drain() { try settle(failure) }
                }
                try tellSettled()
            }
            while let failure = writer.drain() { try settle(failure) }
            try tellSettled()
        }
    }

    /// An imported item whose reference or primary key is taken: added with
    /// a new reference when only the reference is another item's (the same
    /// backup restored after an edit), else left alone or updated. The item
    /// it conflicts with is the one with its primary key, or, for an item
    /// unique by reference (made over the Secret Service), the one with its
    /// reference: never another item that only shares a service and account.
    private func resolveDuplicate(_ item: ImportedItem, updateExisting: Bool, using inserter: any ItemInserting) throws -> ImportOutcome {
        let group = item.accessGroup ?? defaultGroup
        let attributes = item.attributes
        var query = Query(itemClass: item.itemClass)
        query.accessGroup = group
        let conflicting: ItemFilter
        if item.freeForm.uniqueByReference, let ref = item.persistentRef {
            query.persistentRef = ref
            conflicting = try engine.storeFilter(query)
        } else {
            try query.matchPrimaryKey(of: attributes)
            conflicting = try engine.primaryKeyFilter(query)
        }
        if try engine.rows(query, limit: .one, data: false, filter: conflicting).isEmpty {
            _ = try engine.insert(item.itemClass, attributes, group: group, pclass: item.accessible ?? .whenUnlocked, data: item.data,
                           extra: item.extra, ref: nil, created: item.creationDate, modified: item.modificationDate, using: inserter,
                           freeForm: item.freeForm)
            return .addedWithNewReference
        }
        guard updateExisting else { return .existing }
        let changes = Dictionary(uniqueKeysWithValues: Attribute.allCases.filter {
            item.itemClass.supports($0) && $0.isSealed
        }.map { ($0, attributes[$0] ?? []) })
        // A kind-1 record (every backup before kind 2) can't say "no free-form
        // attributes": the existing item's are kept rather than erased.
        _ = try engine.modify(query, changes: changes, accessGroup: nil, data: item.data, extra: item.extra,
                       freeForm: item.freeForm.isEmpty ? nil : item.freeForm,
                       filter: conflicting)
        return .updated
    }
}
