import LocketSupport

/// Every statement on the `items` table. The engine decides what to look for
/// (which class, which groups the caller may see, which digests); this is
/// the only place that turns that into SQL, and the only reader of a
/// selected row's columns, so a SELECT and its reader can't drift apart.
///
/// The one place that knows the file's format: format 2 (items and a
/// `blind(digest, item)` table) is what the engine writes; format 1 (a
/// blind-index column per attribute) is read as it is by read-only commands,
/// and written only by tests that make format-1 files to migrate.
struct ItemStore {
    let database: Database
    /// The format of the file (SPEC §7): 1 or 2.
    let format: Int64

    /// Format 2: replaces the blind rows of item `id` by those of `digests`.
    fileprivate final class BlindWriter {
        private let database: Database
        /// Statements inserting n rows at once, by n: each statement step has
        /// a fixed cost (reset, bindings, the VDBE's halt) of about one row's
        /// insert, and an item has a row per attribute of its class.
        private var inserts: [Int: Statement] = [:]
        private var clear: Statement?

        init(_ database: Database) { self.database = database }

        func write(_ id: Int64, _ digests: ItemDigests, replacing: Bool) throws {
            if replacing {
                if clear == nil { clear = try database.prepare("DELETE FROM blind WHERE item = ?") }
                clear!.reset()
                try clear!.bind(1, id)
                _ = try clear!.step()
            }
            let n = digests.index.count + digests.free.count
            guard n > 0 else { return }
            let insert = try statement(rows: n)
            insert.reset()
            for (k, entry) in digests.index.enumerated() {
                try insert.bind(Int32(2 * k + 1), entry.digest)
                try insert.bind(Int32(2 * k + 2), id)
            }
            for (k, digest) in digests.free.enumerated() {
                try insert.bind(Int32(2 * (digests.index.count + k) + 1), digest)
                try insert.bind(Int32(2 * (digests.index.count + k) + 2), id)
            }
            // Two attributes' digests only coincide by a 64-bit collision: OR IGNORE covers it.
            _ = try insert.step()
        }

        private func statement(rows n: Int) throws -> Statement {
            if let stmt = inserts[n] { return stmt }
            let values = [String](repeating: "(?, ?)", count: n).joined(with: ", ")
            let stmt = try database.prepare("INSERT OR IGNORE INTO blind(digest, item) VALUES \(values)")
            inserts[n] = stmt
            return stmt
        }
    }

    private func prepare(_ sql: String, _ bindings: [SQLValue]) throws -> Statement {
        let stmt = try database.prepare(sql)
        for (i, b) in bindings.enumerated() {
            switch b {
            case .text(let s): try stmt.bind(Int32(i + 1), s)
            case .blob(let v): try stmt.bind(Int32(i + 1), v)
            case .int(let v): try stmt.bind(Int32(i + 1), v)
            }
        }
        return stmt
    }

    // MARK: - Reading

    /// A selected row; read through its named accessors only.
    struct Row {
        fileprivate let stmt: Statement

        /// The columns every SELECT of this file returns, in this order.
        fileprivate enum Column: Int32 { case id, ref, cls, pdmn, agrp, attrs, data }
        fileprivate static func columns(data: Bool) -> String { "id, ref, cls, pdmn, agrp, attrs, \(data ? "data" : "NULL")" }

        var id: Int64 { stmt.int64(Column.id.rawValue) }
        var ref: [UInt8] { stmt.blob(Column.ref.rawValue) }
        var itemClass: ItemClass? { ItemClass(rawValue: stmt.text(Column.cls.rawValue)) }
        var protectionClassCode: String { stmt.text(Column.pdmn.rawValue) }
        var accessGroup: String { stmt.text(Column.agrp.rawValue) }
        /// The sealed attribute record, without copying; valid until the next step.
        func withAttributes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try stmt.withBlob(Column.attrs.rawValue, body)
        }
        /// The sealed secret (only when selected with `data`).
        func withData<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try stmt.withBlob(Column.data.rawValue, body)
        }
    }

    /// Rows matching `filter`, oldest first; `data` selects the sealed secret too.
    final class Cursor {
        fileprivate let stmt: Statement
        fileprivate init(_ stmt: Statement) { self.stmt = stmt }
        /// The next row, nil at the end.
        func next() throws -> Row? { try stmt.step() ? Row(stmt: stmt) : nil }
    }

    func select(_ filter: ItemFilter, data: Bool) throws -> Cursor {
        let (condition, bindings) = condition(filter)
        // A primary-key match is at most a row per access group: sorting
        // those few costs less than SQLite's planner weighing a scan in rowid
        // order against the index (`+id` orders the same, and leaves the
        // planner that one question: 5 k instructions of every lookup,
        // bench/README.md "Later cuts"). Any other search keeps `id`, which a
        // scan of the whole table delivers in order without a sort.
        let order = format != 1 && filter.primaryKey != nil ? "+id" : "id"
        return Cursor(try prepare("SELECT \(Row.columns(data: data)) FROM items WHERE \(condition) ORDER BY \(order)", bindings))
    }

    /// Reads rows by id, one at a time (rotation), with one prepared statement.
    final class RowReader {
        fileprivate let stmt: Statement
        fileprivate init(_ stmt: Statement) { self.stmt = stmt }

        /// The row `id`, valid until `finish` or the next call.
        func row(_ id: Int64) throws -> Row? {
            stmt.reset()
            try stmt.bind(1, id)
            return try stmt.step() ? Row(stmt: stmt) : nil
        }

        /// Lets go of the row before it is written.
        func finish() { stmt.reset() }
    }

    func prepareRowReader() throws -> RowReader {
        RowReader(try database.prepare("SELECT \(Row.columns(data: true)) FROM items WHERE id = ?"))
    }

    /// Up to `limit` ids after `id`, in order.
    func ids(after id: Int64, limit: Int) throws -> [Int64] {
        let stmt = try database.prepare("SELECT id FROM items WHERE id > ? ORDER BY id LIMIT ?")
        try stmt.bind(1, id)
        try stmt.bind(2, Int64(limit))
        var ids: [Int64] = []
        while try stmt.step() { ids.append(stmt.int64(0)) }
        return ids
    }

    /// The (protection class code, group) pairs present among the rows `filter` matches.
    func classesAndGroups(_ filter: ItemFilter) throws -> [(String, String)] {
        let (condition, bindings) = condition(filter)
        let stmt = try prepare("SELECT DISTINCT pdmn, agrp FROM items WHERE \(condition)", bindings)
        var pairs: [(String, String)] = []
        while try stmt.step() { pairs.append((stmt.text(0), stmt.text(1))) }
        return pairs
    }

    /// How many rows `filter` matches, by protection class code.
    func countByProtectionClass(_ filter: ItemFilter) throws -> [String: Int] {
        let (condition, bindings) = condition(filter)
        let stmt = try prepare("SELECT pdmn, count(*) FROM items WHERE \(condition) GROUP BY pdmn", bindings)
        var counts: [String: Int] = [:]
        while try stmt.step() { counts[stmt.text(0)] = Int(stmt.int64(1)) }
        return counts
    }

    /// The largest id ever used (0 for an empty keychain).
    func maximumID() throws -> Int64 {
        let stmt = try database.prepare("SELECT ifnull(max(id), 0) FROM items")
        _ = try stmt.step()
        return stmt.int64(0)
    }

    // MARK: - Writing

    /// A prepared INSERT, reused for a batch.
    final class Inserter {
        fileprivate let stmt: Statement
        fileprivate let blind: BlindWriter?
        fileprivate let database: Database
        fileprivate init(_ stmt: Statement, blind: BlindWriter?, database: Database) {
            self.stmt = stmt
            self.blind = blind
            self.database = database
        }

        /// Inserts one row; errSecDuplicateItem when its primary key exists in its class and group.
        func insert(ref: [UInt8], itemClass: ItemClass, accessible: ProtectionClass, group: String,
                    digests: ItemDigests, attributes: [UInt8], data: [UInt8]) throws {
            stmt.reset()
            try stmt.bind(1, ref)
            try stmt.bind(2, itemClass.rawValue)
            try stmt.bind(3, accessible.rawValue)
            try stmt.bind(4, group)
            try stmt.bind(5, digests.primaryKey)
            let i = blind == nil ? try digests.bindIndex(stmt, from: 6) : 6
            try stmt.bind(i, attributes)
            try stmt.bind(i + 1, data)
            _ = try stmt.step()
            try blind?.write(database.lastInsertedRowID, digests, replacing: false)
        }
    }

    func prepareInsert() throws -> Inserter {
        if format >= 2 {
            return Inserter(try database.prepare("INSERT INTO items(ref, cls, pdmn, agrp, pk, attrs, data) VALUES (?, ?, ?, ?, ?, ?, ?)"),
                            blind: BlindWriter(database), database: database)
        }
        let columns = Schema.indexedAttributes.map(Schema.indexColumn)
        return Inserter(try database.prepare("""
            INSERT INTO items(ref, cls, pdmn, agrp, pk, \(columns.joined(with: ", ")), attrs, data)
            VALUES (?, ?, ?, ?, ?, \(columns.map { _ in "?" }.joined(with: ", ")), ?, ?)
            """), blind: nil, database: database)
    }

    /// A prepared UPDATE of one row's group, protection class, digests and sealed values.
    final class Updater {
        fileprivate let stmt: Statement
        fileprivate let blind: BlindWriter?
        fileprivate init(_ stmt: Statement, blind: BlindWriter?) {
            self.stmt = stmt
            self.blind = blind
        }

        func update(id: Int64, group: String, accessible: ProtectionClass, digests: ItemDigests, attributes: [UInt8], data: [UInt8]) throws {
            stmt.reset()
            try stmt.bind(1, group)
            try stmt.bind(2, accessible.rawValue)
            try stmt.bind(3, digests.primaryKey)
            let i = blind == nil ? try digests.bindIndex(stmt, from: 4) : 4
            try stmt.bind(i, attributes)
            try stmt.bind(i + 1, data)
            try stmt.bind(i + 2, id)
            _ = try stmt.step()
            try blind?.write(id, digests, replacing: true)
        }
    }

    func prepareUpdate() throws -> Updater {
        if format >= 2 {
            return Updater(try database.prepare("UPDATE items SET agrp = ?, pdmn = ?, pk = ?, attrs = ?, data = ? WHERE id = ?"),
                           blind: BlindWriter(database))
        }
        let columns = Schema.indexedAttributes.map(Schema.indexColumn)
        return Updater(try database.prepare("""
            UPDATE items SET agrp = ?, pdmn = ?, pk = ?, \(columns.map { "\($0) = ?" }.joined(with: ", ")), attrs = ?, data = ?
            WHERE id = ?
            """), blind: nil)
    }

    /// Deletes every row `filter` matches; returns how many.
    func delete(_ filter: ItemFilter) throws -> Int {
        let (condition, bindings) = condition(filter)
        guard format >= 2 else {
            _ = try prepare("DELETE FROM items WHERE \(condition)", bindings).step()
            return database.changes
        }
        // The condition reads the blind rows: find the ids before removing either.
        let select = try prepare("SELECT id FROM items WHERE \(condition)", bindings)
        var ids: [Int64] = []
        while try select.step() { ids.append(select.int64(0)) }
        let item = try database.prepare("DELETE FROM items WHERE id = ?")
        let blind = try database.prepare("DELETE FROM blind WHERE item = ?")
        for id in ids {
            for stmt in [item, blind] {
                stmt.reset()
                try stmt.bind(1, id)
                _ = try stmt.step()
            }
        }
        return ids.count
    }
}

extension ItemDigests {
    /// Binds format 1's index columns from parameter `first` on; returns the next parameter.
    fileprivate func bindIndex(_ stmt: Statement, from first: Int32) throws -> Int32 {
        var i = first
        for attribute in Schema.indexedAttributes {
            let entry = digest(of: attribute)
            try stmt.bind(i, entry.flatMap { $0.isEmpty ? nil : $0.digest })
            i += 1
        }
        return i
    }
}
