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
