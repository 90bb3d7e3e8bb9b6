import LocketSupport

/// One item `import` adds: a backup record (reference, dates, group and class
/// kept) or a migrated entry (none of those: new reference, now, the default group).
public struct ImportedItem {
    public var itemClass: ItemClass
    public var attributes: [Attribute: [UInt8]]
    public var data: SecureBytes
    public var extra: SecureBytes?
    /// nil: the caller's default access group.
    public var accessGroup: String?
    /// nil: when-unlocked.
    public var accessible: ProtectionClass?
    /// nil: a new reference.
    public var persistentRef: [UInt8]?
    public var creationDate: Int64?
    public var modificationDate: Int64?
    /// Free-form attributes, content type and uniqueness (SPEC §18): a backup
    /// of an item made over the Secret Service carries them.
    public var freeForm = FreeForm()

    /// An item with the given fields; the rest as a new item would have them.
    public init(itemClass: ItemClass, attributes: [Attribute: [UInt8]], data: SecureBytes, extra: SecureBytes? = nil,
                accessGroup: String? = nil, accessible: ProtectionClass? = nil, persistentRef: [UInt8]? = nil,
                creationDate: Int64? = nil, modificationDate: Int64? = nil) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.data = data
        self.extra = extra
        self.accessGroup = accessGroup
        self.accessible = accessible
        self.persistentRef = persistentRef
        self.creationDate = creationDate
        self.modificationDate = modificationDate
    }

    /// A backup record as it is restored.
    public init(_ record: BackupRecord) {
        self.init(itemClass: record.itemClass, attributes: record.attributes, data: record.data, extra: record.extra,
                  accessGroup: record.accessGroup, accessible: record.accessible, persistentRef: record.persistentRef,
                  creationDate: record.creationDate, modificationDate: record.modificationDate)
        freeForm = record.freeForm
    }
}

/// What happened to one item offered to `importItems`.
public enum ImportOutcome: Sendable, Equatable {
    /// Added, with its own reference when it came with one.
    case added
    /// Added with a new reference: its own was taken by another item.
    case addedWithNewReference
    /// An item with the same primary key exists and was left as it is.
    case existing
    /// An item with the same primary key exists and was updated (`-U`).
    case updated
    /// Its access group is not one the caller may write.
    case notPermitted
}

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
        try require(.importItems)
        try write {
            try storage.bulkWrites?.willImport()
            let inserter = try storage.itemStore.makeInserter()
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
                try checkSize(item.data)
                let group = item.accessGroup ?? defaultGroup
                if let allowed = caller.accessGroups, !allowed.contains(group) {
                    waiting.append((item, .notPermitted))
                    try tellSettled()
                    // A long run of them behind a row still queued: wait for it, so that what is held stays bounded.
                    if waiting.count - head > 512 {
                        while let failure = writer.drain() { try settle(failure) }
                        try tellSettled()
                    }
                    continue
                }
                try authorize(group)
                try checkFreeForm(item.freeForm)
                if item.freeForm.uniqueByReference && !markedUniqueByReference {
                    // The header row is written here, on the importing thread: the
                    // writer must be idle first (the connection is one thread's at a time).
                    while let failure = writer.drain() { try settle(failure) }
                    try markUniqueByReference()
                    markedUniqueByReference = true
                }
                let row = try seal(item.itemClass, item.attributes, group: group, pclass: item.accessible ?? .whenUnlocked,
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
            conflicting = try storeFilter(query)
        } else {
            try query.matchPrimaryKey(of: attributes)
            conflicting = try primaryKeyFilter(query)
        }
        if try rows(query, limit: .one, data: false, filter: conflicting).isEmpty {
            _ = try insert(item.itemClass, attributes, group: group, pclass: item.accessible ?? .whenUnlocked, data: item.data,
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
        _ = try modify(query, changes: changes, accessGroup: nil, data: item.data, extra: item.extra,
                       freeForm: item.freeForm.isEmpty ? nil : item.freeForm,
                       filter: conflicting)
        return .updated
    }
}
