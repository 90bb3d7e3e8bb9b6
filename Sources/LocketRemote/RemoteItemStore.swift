import LocketCore
import LocketSupport

/// The item statements of a remote keychain (SPEC §17): format 2's items
/// and blind index in RemoteSchema's tables, through the transaction the
/// engine is in. The condition of every statement is format 2's, which the
/// file shares (`ItemFilter.condition`, PostgreSQL dialect), so a query
/// selects the same rows here as in a file. Values are only ever bound parameters.
struct RemoteItemStore: ItemStoring {
    let store: RemoteStore

    private func execute(_ sql: String, _ parameters: [RemoteValue]) throws -> [RemoteRow] {
        try store.execute(sql, parameters)
    }

    private func condition(_ filter: ItemFilter) -> (String, [RemoteValue]) {
        let condition = filter.condition(.postgres)
        return (condition.sql, condition.bindings.map(\.remote))
    }

    /// A set of blind-index digests as one parameter (`$N::text::bigint[]`):
    /// the wire has no array type, and digests are no secret (keyed hashes).
    static func digestArray(_ digests: ItemDigests) -> RemoteValue {
        .text("{" + Set(digests.index.map(\.digest) + digests.free).sorted().map(String.init).joined(with: ",") + "}")
    }

    /// Offline: the cached rows `filter` matches, as the server's statement would select them.
    private func cached(_ filter: ItemFilter) -> [RemoteCache.Row]? {
        store.offline.map { $0.rows.filter { row in
            filter.matches(itemClass: row.itemClass, group: row.group, ref: row.ref, protectionClass: row.protectionClass,
                           primaryKey: row.primaryKey, digests: row.digests)
        } }
    }

    func select(_ filter: ItemFilter, data: Bool) throws -> Cursor {
        if let rows = cached(filter) {
            return Cursor(store: store, rows: rows.map { row in
                RemoteRow(values: [.int(row.id), .bytes(row.ref), .text(row.itemClass), .text(row.protectionClass), .text(row.group),
                                   .bytes(row.attributes), data ? .bytes(row.data) : .null, .bytes(row.primaryKey), .null], names: [])
            })
        }
        let (sql, parameters) = condition(filter)
        let rows = try execute("""
            SELECT id, ref, cls, pdmn, agrp, attrs, \(data ? "data" : "NULL::bytea"), pk, dh
            FROM locket.items WHERE \(sql) ORDER BY id
            """, parameters)
        // The paths of every row selected, proven in one statement before any is opened.
        try store.prove(rows.compactMap { $0[0].int })
        return Cursor(store: store, rows: rows)
    }

    func makeInserter() throws -> any ItemInserting { Inserter(store: store) }
    func makeUpdater() throws -> any ItemUpdating { Updater(store: store) }

    func delete(_ filter: ItemFilter) throws -> Int {
        // The blind rows go with their items (ON DELETE CASCADE).
        let (sql, parameters) = condition(filter)
        let rows = try execute("DELETE FROM locket.items WHERE \(sql) RETURNING id, ref", parameters)
        let deleted = rows.compactMap { $0[0].int }
        store.removed(deleted, refs: rows.compactMap { $0[1].bytes })
        return deleted.count
    }

    func classesAndGroups(_ filter: ItemFilter) throws -> [(String, String)] {
        if let rows = cached(filter) {
            var seen: Set<[String]> = []
            return rows.compactMap { seen.insert([$0.protectionClass, $0.group]).inserted ? ($0.protectionClass, $0.group) : nil }
        }
        let (sql, parameters) = condition(filter)
        return try execute("SELECT DISTINCT pdmn, agrp FROM locket.items WHERE \(sql)", parameters)
            .map { ($0[0].text ?? "", $0[1].text ?? "") }
    }

    func countByProtectionClass(_ filter: ItemFilter) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        if let rows = cached(filter) {
            for row in rows { counts[row.protectionClass, default: 0] += 1 }
            return counts
        }
        let (sql, parameters) = condition(filter)
        for row in try execute("SELECT pdmn, count(*) FROM locket.items WHERE \(sql) GROUP BY pdmn", parameters) {
            counts[row[0].text ?? ""] = Int(row[1].int ?? 0)
        }
        return counts
    }

    /// Not offline: a pass over every row is a write's (a rotation), which needs the server.
    func ids(after id: Int64, limit: Int) throws -> [Int64] {
        try execute("SELECT id FROM locket.items WHERE id > $1 ORDER BY id LIMIT $2", [.int(id), .int(Int64(limit))]).compactMap { $0[0].int }
    }

    func makeRowReader() throws -> RowReader { RowReader(store: store) }

    /// Rows by id, one statement each.
    struct RowReader: ItemRowReading {
        let store: RemoteStore
        func row(_ id: Int64) throws -> Row? {
            try store.execute("SELECT id, ref, cls, pdmn, agrp, attrs, data, pk, dh FROM locket.items WHERE id = $1", [.int(id)]).first
                .map { try store.opened($0) }
        }
        func finish() {}
    }

    func maximumID() throws -> Int64 {
        if let offline = store.offline { return offline.rows.map(\.id).max() ?? 0 }
        return try execute("SELECT coalesce(max(id), 0) FROM locket.items", []).first?[0].int ?? 0
    }

    /// A selected row.
    struct Row: StoredItemRow {
        let values: RemoteRow
        var id: Int64 { values[0].int ?? 0 }
        var ref: [UInt8] { values[1].bytes ?? [] }
        var itemClass: ItemClass? { values[2].text.flatMap(ItemClass.init(rawValue:)) }
        var protectionClassCode: String { values[3].text ?? "" }
        var accessGroup: String { values[4].text ?? "" }
        func withAttributes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try (values[5].bytes ?? []).withUnsafeBytes(body)
        }
        func withData<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try (values[6].bytes ?? []).withUnsafeBytes(body)
        }
    }

    /// Each row checked against the signed state and its padding removed (`RemoteStore.opened`).
    final class Cursor: ItemCursor {
        private let store: RemoteStore
        private var rows: IndexingIterator<[RemoteRow]>
        init(store: RemoteStore, rows: [RemoteRow]) {
            self.store = store
            self.rows = rows.makeIterator()
        }
        func next() throws -> Row? { try rows.next().map { try store.opened($0) } }
    }

    /// One statement per item: the row and its blind rows together. An
    /// existing primary key inserts nothing and is errSecDuplicateItem with
    /// the transaction still usable, as SQLite leaves it (`add -U` goes on to
    /// update); a unique violation would abort a PostgreSQL transaction.
    struct Inserter: ItemInserting {
        let store: RemoteStore
        func insert(ref: [UInt8], itemClass: ItemClass, accessible: ProtectionClass, group: String,
                    digests: ItemDigests, attributes: [UInt8], data: [UInt8]) throws {
            let stored = try store.padded(group: group, primaryKey: digests.primaryKey, attributes: attributes, data: data)
            let inserted = try store.execute("""
                WITH item AS (INSERT INTO locket.items(ref, cls, pdmn, agrp, pk, attrs, data, vh, dh)
                              VALUES ($1, $2, $3, $4, $5, $6, $7, $9, $10)
                              ON CONFLICT ON CONSTRAINT items_primary_key DO NOTHING RETURNING id),
                     blind AS (INSERT INTO locket.blind(digest, item) SELECT d, item.id FROM item, unnest($8::text::bigint[]) d)
                SELECT id FROM item
                """, [.bytes(ref), .text(itemClass.rawValue), .text(accessible.rawValue), .text(group),
                      .bytes(digests.primaryKey), .bytes(stored.attributes), .bytes(stored.data), RemoteItemStore.digestArray(digests),
                      .bytes(stored.version), .bytes(stored.dataHash)])
            guard let id = inserted.first?[0].int else { throw KeychainError(.duplicateItem) }
            try store.wrote(id: id, ref: ref, version: stored.version, inserted: true)
        }
    }

    /// One statement per item: the row, its blind rows no longer true dropped, the new ones added.
    struct Updater: ItemUpdating {
        let store: RemoteStore
        func update(id: Int64, group: String, accessible: ProtectionClass, digests: ItemDigests, attributes: [UInt8], data: [UInt8]) throws {
            let stored = try store.padded(group: group, primaryKey: digests.primaryKey, attributes: attributes, data: data)
            let updated = try store.execute("""
                WITH item AS (UPDATE locket.items SET agrp = $2, pk = $3, attrs = $4, data = $5, vh = $7, dh = $8, pdmn = $9 WHERE id = $1 RETURNING ref),
                     wanted AS (SELECT d FROM unnest($6::text::bigint[]) d),
                     dropped AS (DELETE FROM locket.blind WHERE item = $1 AND digest NOT IN (SELECT d FROM wanted)),
                     added AS (INSERT INTO locket.blind(digest, item) SELECT d, $1 FROM wanted ON CONFLICT DO NOTHING)
                SELECT ref FROM item
                """, [.int(id), .text(group), .bytes(digests.primaryKey), .bytes(stored.attributes), .bytes(stored.data),
                      RemoteItemStore.digestArray(digests), .bytes(stored.version), .bytes(stored.dataHash), .text(accessible.rawValue)])
            // The row was read in this transaction: a server that updates none is lying.
            guard let ref = updated.first?[0].bytes else {
                throw KeychainError(.decode, "an item of \(store.location.url) read in this transaction could not be updated: the database was altered")
            }
            try store.wrote(id: id, ref: ref, version: stored.version, inserted: false)
        }
    }
}

extension RemoteStore {
    /// A row as the engine reads it: checked against the item's version
    /// hash in the verified state, its values unpadded when this device
    /// holds the group (otherwise the engine refuses the row before opening it).
    func opened(_ values: RemoteRow) throws -> RemoteItemStore.Row {
        var columns = values.values
        guard columns.count >= 9, let id = columns[0].int, let group = columns[4].text, let attributes = columns[5].bytes else {
            return RemoteItemStore.Row(values: values)
        }
        let data = columns[6].bytes
        if itemTree != nil {
            try checkVersion(id: id, ref: columns[1].bytes ?? [], primaryKey: columns[7].bytes ?? [], attributes: attributes,
                             dataHash: data.map(SignedState.dataHash) ?? columns[8].bytes ?? [])
        }
        if let key = try paddingKey(group) {
            columns[5] = .bytes(try RemotePadding.open(attributes, key: key))
            if let data { columns[6] = .bytes(try RemotePadding.open(data, key: key)) }
        }
        return RemoteItemStore.Row(values: RemoteRow(values: columns, names: []))
    }

    /// The engine's sealed values as stored: padded, sealed under the group's
    /// padding key, with the version hash the next signed state covers.
    func padded(group: String, primaryKey: [UInt8], attributes: [UInt8], data: [UInt8])
        throws -> (attributes: [UInt8], data: [UInt8], version: [UInt8], dataHash: [UInt8]) {
        guard let key = try paddingKey(group) else {
            throw KeychainError(.interactionNotAllowed, "this device was not approved for the access group '\(Printable.clip(group))'",
                                reason: .notApproved(group: group))
        }
        let storedAttributes = RemotePadding.seal(attributes, key: key), storedData = RemotePadding.seal(data, key: key)
        let dataHash = SignedState.dataHash(storedData)
        return (storedAttributes, storedData, SignedState.version(primaryKey: primaryKey, attributes: storedAttributes, dataHash: dataHash), dataHash)
    }
}

extension SQLValue {
    /// The same value as a PostgreSQL parameter.
    var remote: RemoteValue {
        switch self {
        case .text(let s): .text(s)
        case .blob(let b): .bytes(b)
        case .int(let i): .int(i)
        }
    }
}
