import Glibc
import LocketSupport

/// SecItemAdd: one item, or a batch in one transaction.
extension Keychain {
    /// Adds an item (SecItemAdd). With `updateExisting`, an item with the same
    /// primary key is updated in place instead (`security add-... -U`),
    /// keeping its persistent reference and creation date.
    @discardableResult
    public func add(_ new: NewItem, data: SecureBytes, extra: SecureBytes? = nil, updateExisting: Bool = false) throws -> Item {
        if new.itemClass.holdsKeyMaterial {
            throw KeychainError(.param, "\(new.itemClass.name) items are added from their value (import, key generate), not with attributes")
        }
        try engine.checkSize(data)
        try engine.checkSizes(new.attributes, group: new.accessGroup)
        try engine.checkFreeForm(new.freeForm)
        let (pclass, control, group) = try engine.placement(accessible: new.accessible, accessControl: new.accessControl, accessGroup: new.accessGroup)
        let attributes = new.storedAttributes
        return try engine.write {
            do {
                if new.freeForm.uniqueByReference { try engine.markUniqueByReference() }
                return try engine.insert(new.itemClass, attributes, group: group, pclass: pclass, data: data, extra: extra, control: control,
                                  freeForm: new.freeForm)
            } catch let error as KeychainError where error.code == .duplicateItem && updateExisting {
                var query = Query(itemClass: new.itemClass)
                try query.matchPrimaryKey(of: attributes)
                query.accessGroup = group
                // The item whose primary key conflicted, and only it: items made over
                // the Secret Service with the same service and account are others.
                let conflicting = try engine.primaryKeyFilter(query)
                if let requested = new.accessible ?? control?.protection {
                    let existing = try engine.rows(query, limit: .one, data: false, filter: conflicting).first
                    if let existing, existing.accessible != requested {
                        throw KeychainError(.param, "accessible can't be changed on an existing item (delete and add it again)")
                    }
                    if let existing, control != nil, existing.accessControl != control {
                        throw KeychainError(.param, "access control can't be changed on an existing item (delete and add it again)")
                    }
                }
                var changes = new.attributes.filter { $0.key.isSealed }
                changes[.label] = changes[.label] ?? attributes[.label]
                changes[.valueTypes] = attributes[.valueTypes] ?? []
                let updated = try engine.modify(query, changes: changes, accessGroup: nil, data: data, extra: extra,
                                         freeForm: new.freeForm.isEmpty ? nil : new.freeForm, filter: conflicting)
                return updated[0]
            }
        }
    }

    /// Adds many items in one transaction (bulk loading for benchmarks and
    /// imports): all or nothing, as `add` of each would be without `-U`.
    public func addBatch<Items: Sequence>(_ items: Items) throws where Items.Element == (item: NewItem, data: SecureBytes) {
        try engine.write {
            // One prepared INSERT for the batch; a lazy sequence keeps only the
            // secret being inserted in guarded memory, not the whole batch.
            let inserter = try engine.storage.itemStore.makeInserter()
            for (new, data) in items {
                try engine.checkSize(data)
                try engine.checkSizes(new.attributes, group: new.accessGroup)
                let group = new.accessGroup ?? defaultGroup
                try engine.authorize(group)
                _ = try engine.insert(new.itemClass, new.storedAttributes, group: group, pclass: new.accessible ?? .whenUnlocked,
                               data: data, extra: nil, using: inserter)
            }
        }
    }
}
