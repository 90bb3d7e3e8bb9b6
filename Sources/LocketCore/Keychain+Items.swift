import Glibc
import LocketSupport

extension Keychain {
    // MARK: - Digests and sealing

    /// The blind index of one attribute value; nil (SQL NULL) for the empty value.
    func indexDigest(_ itemClass: ItemClass, _ attribute: Attribute, _ value: [UInt8]) throws -> Int64? {
        if value.isEmpty { return nil }
        return Keychain.indexDigest(try indexKey(), itemClass, attribute, value)
    }

    static func indexDigest(_ indexKey: SecureBytes, _ itemClass: ItemClass, _ attribute: Attribute, _ value: [UInt8]) -> Int64? {
        if value.isEmpty { return nil }
        let d = KeyDerivation.digest(indexKey, KeyDerivation.Context("locket.index.v1")
            .with(itemClass.rawValue).with(attribute.code).with(value))
        return Int64(bitPattern: d[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }

    /// The digest of an item's primary key (without the access group, which is its own column).
    func primaryKeyDigest(_ itemClass: ItemClass, _ attributes: [Attribute: [UInt8]]) throws -> [UInt8] {
        Keychain.primaryKeyDigest(try indexKey(), itemClass, attributes)
    }

    static func primaryKeyDigest(_ indexKey: SecureBytes, _ itemClass: ItemClass, _ attributes: [Attribute: [UInt8]]) -> [UInt8] {
        var context = KeyDerivation.Context("locket.pk.v1").with(itemClass.rawValue)
        for attribute in itemClass.primaryKey { context.append(attributes[attribute] ?? []) }
        return KeyDerivation.digest(indexKey, context)
    }

    /// The key that seals one field of one row: derived from the (class, group)
    /// key, the item class and the persistent reference, so a sealed value only
    /// opens in the row, class and group it was sealed for.
    func fieldKey(_ row: RowIdentity, _ field: String) throws -> SecureBytes {
        Keychain.fieldKey(try groupKey(row.accessible, row.accessGroup), row, field)
    }

    static func fieldKey(_ groupKey: SecureBytes, _ row: RowIdentity, _ field: String) -> SecureBytes {
        // Appended in place: each `with` copied the context (four allocations per key, two keys per row).
        var context = KeyDerivation.Context("locket.item.v1")
        context.append(row.itemClass.rawValue)
        context.append(row.ref)
        context.append(field)
        return KeyDerivation.derive(groupKey, context)
    }

    struct RowIdentity {
        var itemClass: ItemClass
        var accessible: ProtectionClass
        var accessGroup: String
        var ref: [UInt8]
    }

    // MARK: - Add

    /// Adds an item (SecItemAdd). With `updateExisting`, an item with the same
    /// primary key is updated in place instead (`security add-... -U`),
    /// keeping its persistent reference and creation date.
    @discardableResult
    public func add(_ new: NewItem, data: SecureBytes, extra: SecureBytes? = nil, updateExisting: Bool = false) throws -> Item {
        guard data.count <= Keychain.maximumDataLength else {
            throw KeychainError(.dataTooLarge, "the secret is larger than \(Keychain.maximumDataLength / 1024 / 1024) MiB")
        }
        let pclass = new.accessible ?? .whenUnlocked
        if pclass == .whenPasscodeSetThisDeviceOnly && !hasPassword {
            throw KeychainError(.notAvailable, "\(pclass.name) items need a keychain with a password")
        }
        let group = new.accessGroup ?? defaultGroup
        try authorize(group)
        var attributes = new.attributes.filter { $0.key.isSealed && !$0.value.isEmpty }
        if attributes[.label] == nil && new.attributes[.label] == nil {
            let named: Attribute = new.itemClass == .genericPassword ? .service : .server
            if let value = attributes[named] { attributes[.label] = value }
        }
        return try write {
            do {
                return try insert(new.itemClass, attributes, group: group, pclass: pclass, data: data, extra: extra)
            } catch let error as KeychainError where error.code == .duplicateItem && updateExisting {
                var query = Query(itemClass: new.itemClass)
                for attribute in new.itemClass.primaryKey { try query.match(attribute, attributes[attribute] ?? []) }
                query.accessGroup = group
                if let requested = new.accessible {
                    let existing = try rows(query, limit: .one, data: false).first
                    if let existing, existing.accessible != requested {
                        throw KeychainError(.param, "accessible can't be changed on an existing item (delete and add it again)")
                    }
                }
                var changes = new.attributes.filter { $0.key.isSealed }
                changes[.label] = changes[.label] ?? attributes[.label]
                let updated = try modify(query, changes: changes, newGroup: nil, data: data, extra: extra)
                return updated[0]
            }
        }
    }

    /// Adds many items in one transaction (bulk loading for benchmarks and
    /// imports): all or nothing, as `add` of each would be without `-U`.
    public func addBatch<Items: Sequence>(_ items: Items) throws where Items.Element == (item: NewItem, data: SecureBytes) {
        try write {
            // One prepared INSERT for the batch; a lazy sequence keeps only the
            // secret being inserted in guarded memory, not the whole batch.
            let statement = try prepareInsert()
            for (new, data) in items {
                guard data.count <= Keychain.maximumDataLength else {
                    throw KeychainError(.dataTooLarge, "the secret is larger than \(Keychain.maximumDataLength / 1024 / 1024) MiB")
                }
                let group = new.accessGroup ?? defaultGroup
                try authorize(group)
                var attributes = new.attributes.filter { $0.key.isSealed && !$0.value.isEmpty }
                if attributes[.label] == nil {
                    let named: Attribute = new.itemClass == .genericPassword ? .service : .server
                    if let value = attributes[named] { attributes[.label] = value }
                }
                _ = try insert(new.itemClass, attributes, group: group, pclass: new.accessible ?? .whenUnlocked, data: data,
                               extra: nil, using: statement)
            }
        }
    }

    static let sealedColumns = Attribute.allCases.filter(\.isSealed)

    private func prepareInsert() throws -> Statement {
        let columns = Keychain.sealedColumns
        return try database.prepare("""
            INSERT INTO items(ref, cls, pdmn, agrp, pk, \(columns.map(\.column).joined(with: ", ")), attrs, data)
            VALUES (?, ?, ?, ?, ?, \(columns.map { _ in "?" }.joined(with: ", ")), ?, ?)
            """)
    }

    private func insert(_ itemClass: ItemClass, _ attributes: [Attribute: [UInt8]], group: String,
                        pclass: ProtectionClass, data: SecureBytes, extra: SecureBytes?, using statement: Statement? = nil) throws -> Item {
        let ref = Sodium.random(16)
        let row = RowIdentity(itemClass: itemClass, accessible: pclass, accessGroup: group, ref: ref)
        let attrsKey = try fieldKey(row, "attrs")
        let dataKey = try fieldKey(row, "data")
        let now = Clock.milliseconds()
        var record = ItemRecord.encode(attributes, created: now, modified: now)
        defer { wipe(&record) }
        let stmt = try statement ?? prepareInsert()
        stmt.reset()
        try stmt.bind(1, ref)
        try stmt.bind(2, itemClass.rawValue)
        try stmt.bind(3, pclass.rawValue)
        try stmt.bind(4, group)
        try stmt.bind(5, try primaryKeyDigest(itemClass, attributes))
        var i: Int32 = 6
        for attribute in Keychain.sealedColumns {
            try stmt.bind(i, try indexDigest(itemClass, attribute, attributes[attribute] ?? []))
            i += 1
        }
        try stmt.bind(i, SecretBox.seal(record, key: attrsKey))
        try stmt.bind(i + 1, SecretBox.seal(DataRecord.encode(secret: data, extra: extra), key: dataKey))
        _ = try stmt.step()
        return Item(itemClass: itemClass, attributes: attributes, accessGroup: group, accessible: pclass,
                    persistentRef: ref, creationDate: now, modificationDate: now, data: nil, availability: .available)
    }

    // MARK: - Search

    /// The SQL condition and bindings of a query, over plaintext columns and digests only.
    private func whereClause(_ query: Query) throws -> (String, [(Int32, Binding)]) {
        var conditions = ["cls = ?1"]
        var bindings: [(Int32, Binding)] = [(1, .text(query.itemClass.rawValue))]
        var n: Int32 = 2
        if let group = query.accessGroup {
            try authorize(group)
            conditions.append("agrp = ?\(n)"); bindings.append((n, .text(group))); n += 1
        } else if caller.accessGroups != nil {
            // Items in other apps' groups are invisible: not found, not counted, not dumped.
            conditions.append(visibleGroupsCondition())
        }
        if let ref = query.persistentRef {
            conditions.append("ref = ?\(n)"); bindings.append((n, .blob(ref))); n += 1
        }
        for (attribute, value) in query.attributes {
            if let digest = try indexDigest(query.itemClass, attribute, value) {
                conditions.append("\(attribute.column) = ?\(n)"); bindings.append((n, .int(digest))); n += 1
            } else {
                conditions.append("\(attribute.column) IS NULL")
            }
        }
        return (conditions.joined(with: " AND "), bindings)
    }

    enum Binding {
        case text(String), blob([UInt8]), int(Int64)
    }

    private func prepare(_ sql: String, _ bindings: [(Int32, Binding)]) throws -> Statement {
        let stmt = try database.prepare(sql)
        for (i, b) in bindings {
            switch b {
            case .text(let s): try stmt.bind(i, s)
            case .blob(let v): try stmt.bind(i, v)
            case .int(let v): try stmt.bind(i, v)
            }
        }
        return stmt
    }

    /// Matching items in stable order (oldest first). A match whose class key
    /// is unavailable fails the whole search with errSecInteractionNotAllowed:
    /// a locked item is never reported as missing.
    func rows(_ query: Query, limit: MatchLimit, data: Bool) throws -> [Item] {
        let (condition, bindings) = try whereClause(query)
        let stmt = try prepare("SELECT id, ref, pdmn, agrp, attrs\(data ? ", data" : "") FROM items WHERE \(condition) ORDER BY id", bindings)
        var found: [Item] = []
        let wanted = limit.sqlLimit
        while try stmt.step() {
            guard let item = try openRow(stmt, itemClass: query.itemClass, data: data, strict: true) else { continue }
            // The digests matched; confirm byte for byte now that the values are open.
            guard query.attributes.allSatisfy({ item[$0.0] == $0.1 }) else { continue }
            found.append(item)
            if wanted >= 0 && found.count >= wanted { break }
        }
        return found
    }

    /// Opens the row under `stmt` (columns: id, ref, pdmn, agrp, attrs[, data]).
    /// With `strict`, an unavailable key or damaged value throws; otherwise the
    /// item comes back with its availability set and no attributes.
    func openRow(_ stmt: Statement, itemClass: ItemClass, data: Bool, strict: Bool, offset: Int32 = 0, id: Int64? = nil) throws -> Item? {
        let id = id ?? stmt.int64(0)
        let ref = stmt.blob(1 + offset)
        guard let pclass = ProtectionClass(rawValue: stmt.text(2 + offset)) else {
            if strict { throw KeychainError(.decode, "an item has an unknown protection class") }
            return Item(itemClass: itemClass, attributes: [:], accessGroup: stmt.text(3 + offset), accessible: .whenUnlocked,
                        persistentRef: ref, creationDate: 0, modificationDate: 0, data: nil, availability: .damaged)
        }
        let row = RowIdentity(itemClass: itemClass, accessible: pclass, accessGroup: stmt.text(3 + offset), ref: ref)
        var item = Item(itemClass: itemClass, attributes: [:], accessGroup: row.accessGroup, accessible: pclass,
                        persistentRef: ref, creationDate: 0, modificationDate: 0, data: nil,
                        availability: availability(of: pclass, group: row.accessGroup, id: id))
        guard item.availability == .available else {
            if strict { throw unavailable(pclass, row.accessGroup, id: id) }
            return item
        }
        do {
            let opened = try stmt.withBlob(4 + offset) { try SecretBox.open($0, key: try fieldKey(row, "attrs"), what: "an item's attributes") }
            let record = try ItemRecord.decode(opened)
            item.attributes = record.attributes
            item.creationDate = record.created
            item.modificationDate = record.modified
            if data {
                let record = try stmt.withBlob(5 + offset) { try SecretBox.open($0, key: try fieldKey(row, "data"), what: "an item's secret") }
                (item.data, item.extra) = try DataRecord.decode(record)
            }
        } catch let error as KeychainError where error.code == .decode {
            if strict {
                throw KeychainError(.decode, "an item (ref \(Hex.encode(ref))) could not be opened: it was altered or moved")
            }
            item.attributes = [:]
            item.availability = .damaged
        }
        return item
    }

    /// Finds items (SecItemCopyMatching): at most one unless `limit` says otherwise.
    public func search(_ query: Query, limit: MatchLimit = .one, returnData: Bool = false) throws -> [Item] {
        if case .count(let n) = limit, n < 1 { throw KeychainError(.param, "the match limit must be at least 1") }
        let found = try database.transaction(write: false) { () throws -> [Item] in
            do {
                let found = try rows(query, limit: limit, data: returnData)
                if found.isEmpty { try checkKeysCurrent() }
                return found
            } catch let error as KeychainError where error.code == .decode {
                try checkKeysCurrent()
                throw error
            }
        }
        if found.isEmpty { throw KeychainError(.itemNotFound) }
        return found
    }

    // MARK: - Update

    /// Changes every match (SecItemUpdate), all or nothing. `changes` maps
    /// sealed attributes to new values; `newGroup` moves the items.
    @discardableResult
    public func update(_ query: Query, changes: [Attribute: [UInt8]], newGroup: String? = nil, data: SecureBytes? = nil,
                       extra: SecureBytes? = nil) throws -> Int {
        if let data, data.count > Keychain.maximumDataLength {
            throw KeychainError(.dataTooLarge, "the secret is larger than \(Keychain.maximumDataLength / 1024 / 1024) MiB")
        }
        if changes[.accessible] != nil {
            throw KeychainError(.param, "accessible is set when an item is added and can't be changed")
        }
        if changes[.accessGroup] != nil {
            throw KeychainError(.param, "the access group is changed with newGroup, not as an attribute")
        }
        for attribute in changes.keys where !query.itemClass.supports(attribute) {
            throw Query.foreign(attribute, query.itemClass)
        }
        if let newGroup { try authorize(newGroup) }
        return try write { try modify(query, changes: changes, newGroup: newGroup, data: data, extra: extra).count }
    }

    /// The body of update, inside the caller's transaction.
    /// A new `data` replaces the secret and its metadata (`extra`) together.
    func modify(_ query: Query, changes: [Attribute: [UInt8]], newGroup: String?, data: SecureBytes?, extra: SecureBytes?) throws -> [Item] {
        let (condition, bindings) = try whereClause(query)
        let select = try prepare("SELECT id, ref, pdmn, agrp, attrs, data FROM items WHERE \(condition) ORDER BY id", bindings)
        var matches: [(Int64, Item)] = []
        while try select.step() {
            // Re-sealing under a new group needs the old secret open as well.
            guard let item = try openRow(select, itemClass: query.itemClass, data: newGroup != nil || data == nil, strict: true),
                  query.attributes.allSatisfy({ item[$0.0] == $0.1 }) else { continue }
            matches.append((select.int64(0), item))
        }
        guard !matches.isEmpty else { throw KeychainError(.itemNotFound) }
        let columns = Attribute.allCases.filter(\.isSealed)
        let update = try database.prepare("""
            UPDATE items SET agrp = ?, pk = ?, \(columns.map { "\($0.column) = ?" }.joined(with: ", ")), attrs = ?, data = ?
            WHERE id = ?
            """)
        let now = Clock.milliseconds()
        var updated: [Item] = []
        for (id, var item) in matches {
            for (attribute, value) in changes { item[attribute] = value }
            if let newGroup { item.accessGroup = newGroup }
            item.modificationDate = now
            let row = RowIdentity(itemClass: item.itemClass, accessible: item.accessible, accessGroup: item.accessGroup, ref: item.persistentRef)
            var record = ItemRecord.encode(item.attributes, created: item.creationDate, modified: now)
            defer { wipe(&record) }
            update.reset()
            try update.bind(1, item.accessGroup)
            try update.bind(2, try primaryKeyDigest(item.itemClass, item.attributes))
            var i: Int32 = 3
            for attribute in columns {
                try update.bind(i, try indexDigest(item.itemClass, attribute, item[attribute]))
                i += 1
            }
            try update.bind(i, SecretBox.seal(record, key: try fieldKey(row, "attrs")))
            guard let secret = data ?? item.data else { throw KeychainError(.decode, "an item's secret could not be opened") }
            let dataRecord = DataRecord.encode(secret: secret, extra: data != nil ? extra : item.extra)
            try update.bind(i + 1, SecretBox.seal(dataRecord, key: try fieldKey(row, "data")))
            try update.bind(i + 2, id)
            _ = try update.step()
            item.data = nil
            item.extra = nil
            updated.append(item)
        }
        return updated
    }

    // MARK: - Delete

    /// Deletes every match (SecItemDelete). Works while locked: it needs only
    /// digests, never an open value, so a read failure can never cause it.
    @discardableResult
    public func delete(_ query: Query) throws -> Int {
        try write {
            let (condition, bindings) = try whereClause(query)
            let stmt = try prepare("DELETE FROM items WHERE \(condition)", bindings)
            _ = try stmt.step()
            let n = database.changes
            if n == 0 { throw KeychainError(.itemNotFound) }
            return n
        }
    }

    // MARK: - Dump

    /// Streams every item, oldest first. Items that cannot be opened come with
    /// their availability set. With `returnData`, a locked class with items
    /// fails the dump up front (errSecInteractionNotAllowed) before anything is streamed.
    public func dump(returnData: Bool, _ body: (Item) throws -> Void) throws {
        try database.transaction(write: false) {
            try checkKeysCurrent()
            if returnData {
                // Fail before streaming anything: every (class, group) present must open.
                let visible = caller.accessGroups == nil ? "" : " WHERE " + visibleGroupsCondition()
                let pairs = try database.prepare("SELECT DISTINCT pdmn, agrp FROM items\(visible)")
                while try pairs.step() {
                    guard let pclass = ProtectionClass(rawValue: pairs.text(0)) else { continue }
                    let group = pairs.text(1)
                    if availability(of: pclass, group: group) == .locked { throw unavailable(pclass, group) }
                }
            }
            let visible = caller.accessGroups == nil ? "" : " WHERE " + visibleGroupsCondition()
            let stmt = try database.prepare("SELECT id, ref, pdmn, agrp, attrs, \(returnData ? "data" : "NULL"), cls FROM items\(visible) ORDER BY id")
            while try stmt.step() {
                guard let itemClass = ItemClass(rawValue: stmt.text(6)) else { continue }
                if let item = try openRow(stmt, itemClass: itemClass, data: returnData, strict: false) { try body(item) }
            }
        }
    }
}
