/// The keys and digests an item row is sealed and found with (SPEC §7):
/// blind indexes and the primary-key digest under the blind-index key, and
/// field keys under the (class, group) key, bound to the row.
package enum Sealing {
    /// The plaintext identity of a row that its sealed values are bound to.
    package struct RowIdentity {
        package var itemClass: ItemClass
        package var accessible: ProtectionClass
        package var accessGroup: String
        package var ref: [UInt8]

        package init(itemClass: ItemClass, accessible: ProtectionClass, accessGroup: String, ref: [UInt8]) {
            self.itemClass = itemClass
            self.accessible = accessible
            self.accessGroup = accessGroup
            self.ref = ref
        }
    }

    /// The blind index of one attribute value: a keyed hash of (item class,
    /// attribute code, value), 8 bytes as a signed integer. Format 1 stores
    /// none for the empty value; format 2 stores the digest of "" like any other.
    static func indexDigest(_ indexKey: SecureBytes, _ itemClass: ItemClass, _ attribute: Attribute, _ value: [UInt8]) -> Int64 {
        var context = indexContext(itemClass)
        return indexDigest(indexKey, &context, attribute, value)
    }

    /// The context every blind index of `itemClass` starts with.
    private static func indexContext(_ itemClass: ItemClass) -> KeyDerivation.Context {
        var context = KeyDerivation.Context("locket.index.v1")
        context.append(itemClass.rawValue)
        return context
    }

    /// `indexDigest` from the class's context (left as it was given).
    private static func indexDigest(_ indexKey: SecureBytes, _ context: inout KeyDerivation.Context, _ attribute: Attribute,
                                    _ value: [UInt8]) -> Int64 {
        let prefix = context.count
        defer { context.truncate(to: prefix) }
        context.append(attribute.code)
        context.append(value)
        return Int64(bitPattern: KeyDerivation.digest64(indexKey, context))
    }

    /// The digest of an item's primary key (without the access group, which
    /// is its own column). Synchronizable is part of every class's, as
    /// Apple's (a synchronizable item and one that is not may share the
    /// rest), appended only when set: an item that is not synchronizable
    /// keeps the digest every item had before the attribute existed.
    static func primaryKeyDigest(_ indexKey: SecureBytes, _ itemClass: ItemClass, _ attributes: [Attribute: [UInt8]],
                                 synchronizable: Bool) -> [UInt8] {
        var context = KeyDerivation.Context("locket.pk.v1").with(itemClass.rawValue)
        for attribute in itemClass.primaryKey { context.append(attributes[attribute] ?? []) }
        if synchronizable { context.append(Attribute.synchronizable.code) }
        return KeyDerivation.digest(indexKey, context)
    }

    /// The blind index that marks a synchronizable item (the only value it
    /// indexes: an item that is not has no row, so a query for such items
    /// is one `NOT EXISTS` probe, `ItemFilter.excluded`).
    static func synchronizableDigest(_ indexKey: SecureBytes, _ itemClass: ItemClass) -> Int64 {
        indexDigest(indexKey, itemClass, .synchronizable, [0x31])
    }

    /// The blind index of one free-form attribute (SPEC §18): under its own
    /// label, so that no (name, value) pair shares a digest with an Apple attribute.
    static func freeFormDigest(_ indexKey: SecureBytes, _ itemClass: ItemClass, _ name: String, _ value: String) -> Int64 {
        var context = KeyDerivation.Context("locket.free.v1")
        context.append(itemClass.rawValue)
        context.append(name)
        context.append(value)
        return Int64(bitPattern: KeyDerivation.digest64(indexKey, context))
    }

    /// The primary-key digest of an item unique by its reference alone
    /// (FreeForm.uniqueByReference): never equal to another item's.
    static func referenceKeyDigest(_ indexKey: SecureBytes, _ itemClass: ItemClass, _ ref: [UInt8]) -> [UInt8] {
        KeyDerivation.digest(indexKey, KeyDerivation.Context("locket.pk.ref.v1").with(itemClass.rawValue).with(ref))
    }

    /// Every digest the store keeps for an item with `attributes` (and
    /// `freeForm`; `ref` is needed only when it makes the item unique by reference).
    static func digests(_ indexKey: SecureBytes, _ itemClass: ItemClass, _ attributes: [Attribute: [UInt8]],
                        _ freeForm: FreeForm, ref: [UInt8]) -> ItemDigests {
        var digests = digests(indexKey, itemClass, attributes)
        if freeForm.uniqueByReference { digests.primaryKey = referenceKeyDigest(indexKey, itemClass, ref) }
        digests.free = freeForm.attributes.map { freeFormDigest(indexKey, itemClass, $0.key, $0.value) }
        return digests
    }

    /// Every digest the store keeps for an item with `attributes`.
    static func digests(_ indexKey: SecureBytes, _ itemClass: ItemClass, _ attributes: [Attribute: [UInt8]]) -> ItemDigests {
        // One context for the class's digests, cut back after each.
        var context = indexContext(itemClass)
        let index = itemClass.attributes.map { attribute in
            let value = attributes[attribute] ?? []
            return ItemDigests.IndexDigest(attribute: attribute, digest: indexDigest(indexKey, &context, attribute, value),
                                                 isEmpty: value.isEmpty)
        }
        let synchronizable = attributes[.synchronizable] == [0x31]
        var digests = ItemDigests(primaryKey: primaryKeyDigest(indexKey, itemClass, attributes, synchronizable: synchronizable), index: index)
        if synchronizable {
            digests.index.append(ItemDigests.IndexDigest(attribute: .synchronizable, digest: synchronizableDigest(indexKey, itemClass),
                                                         isEmpty: false))
        }
        return digests
    }

    /// The key that seals one field of one row: derived from the (class, group)
    /// key, the item class and the persistent reference, so a sealed value only
    /// opens in the row, class and group it was sealed for.
    static func fieldKey(_ groupKey: SecureBytes, _ row: RowIdentity, _ field: Field) throws -> SecureBytes {
        // The Context encoding of these four fields, built on the stack: in an
        // array it cost as much as the hash itself, two keys per item of a dump.
        var itemClass = row.itemClass.rawValue
        var name = field.rawValue
        return try itemClass.withUTF8 { itemClass in
            try name.withUTF8 { name in
                try row.ref.withUnsafeBytes { ref in
                    try KeyDerivation.derive(groupKey, "locket.item.v1", UnsafeRawBufferPointer(itemClass), ref, UnsafeRawBufferPointer(name))
                }
            }
        }
    }

    /// The two sealed fields of a row.
    package enum Field: String {
        /// The attribute record (ItemRecord: attributes and dates).
        case attributes = "attrs"
        /// The secret and its metadata (DataRecord).
        case data
    }

    /// The key of items of `pclass` in `group`, from the class key.
    static func groupKey(_ classKey: SecureBytes, keychainID: [UInt8], _ pclass: ProtectionClass, _ group: String) throws -> SecureBytes {
        try KeyDerivation.derive(classKey, KeyDerivation.Context("locket.group.v1").with(keychainID).with(pclass.rawValue).with(group))
    }
}
