/// The keys and digests an item row is sealed and found with (SPEC §7):
/// blind indexes and the primary-key digest under the blind-index key, and
/// field keys under the (class, group) key, bound to the row.
enum Sealing {
    /// The plaintext identity of a row that its sealed values are bound to.
    struct RowIdentity {
        var itemClass: ItemClass
        var accessible: ProtectionClass
        var accessGroup: String
        var ref: [UInt8]
    }

    /// The blind index of one attribute value: a keyed hash of (item class,
    /// attribute code, value), 8 bytes as a signed integer. Format 1 stores
    /// none for the empty value; format 2 stores the digest of "" like any other.
    static func indexDigest(_ indexKey: SecureBytes, _ itemClass: ItemClass, _ attribute: Attribute, _ value: [UInt8]) -> Int64 {
        let d = KeyDerivation.digest(indexKey, KeyDerivation.Context("locket.index.v1")
            .with(itemClass.rawValue).with(attribute.code).with(value))
        return Int64(bitPattern: d[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }

    /// The digest of an item's primary key (without the access group, which is its own column).
    static func primaryKeyDigest(_ indexKey: SecureBytes, _ itemClass: ItemClass, _ attributes: [Attribute: [UInt8]]) -> [UInt8] {
        var context = KeyDerivation.Context("locket.pk.v1").with(itemClass.rawValue)
        for attribute in itemClass.primaryKey { context.append(attributes[attribute] ?? []) }
        return KeyDerivation.digest(indexKey, context)
    }

    /// Every digest the store keeps for an item with `attributes`.
    static func digests(_ indexKey: SecureBytes, _ itemClass: ItemClass, _ attributes: [Attribute: [UInt8]]) -> ItemStore.Digests {
        var index: [Attribute: Int64] = [:]
        var empty: Set<Attribute> = []
        for attribute in itemClass.attributes {
            let value = attributes[attribute] ?? []
            if value.isEmpty { empty.insert(attribute) }
            index[attribute] = indexDigest(indexKey, itemClass, attribute, value)
        }
        return ItemStore.Digests(primaryKey: primaryKeyDigest(indexKey, itemClass, attributes), index: index, empty: empty)
    }

    /// The key that seals one field of one row: derived from the (class, group)
    /// key, the item class and the persistent reference, so a sealed value only
    /// opens in the row, class and group it was sealed for.
    static func fieldKey(_ groupKey: SecureBytes, _ row: RowIdentity, _ field: Field) -> SecureBytes {
        // Appended in place: each `with` copied the context (four allocations per key, two keys per row).
        var context = KeyDerivation.Context("locket.item.v1")
        context.append(row.itemClass.rawValue)
        context.append(row.ref)
        context.append(field.rawValue)
        return KeyDerivation.derive(groupKey, context)
    }

    /// The two sealed fields of a row.
    enum Field: String {
        /// The attribute record (ItemRecord: attributes and dates).
        case attributes = "attrs"
        /// The secret and its metadata (DataRecord).
        case data
    }

    /// The key of items of `pclass` in `group`, from the class key.
    static func groupKey(_ classKey: SecureBytes, keychainID: [UInt8], _ pclass: ProtectionClass, _ group: String) -> SecureBytes {
        KeyDerivation.derive(classKey, KeyDerivation.Context("locket.group.v1").with(keychainID).with(pclass.rawValue).with(group))
    }
}
