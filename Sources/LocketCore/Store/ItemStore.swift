import LocketSupport

/// Every statement on the `items` table. The engine decides what to look for
/// (which class, which groups the caller may see, which digests); this is
/// the only place that turns that into SQL, and the only reader of a
/// selected row's columns, so a SELECT and its reader can't drift apart.
struct ItemStore {
    let database: Database

    /// The plaintext and keyed-digest values stored for an item (SPEC §7).
    struct Digests {
        /// The digest of the primary key (unique per class and group).
        var primaryKey: [UInt8]
        /// The blind index of each non-empty sealed attribute value.
        var index: [Attribute: Int64]

        /// Binds format 1's index columns from parameter `first` on; returns the next parameter.
        fileprivate func bindIndex(_ stmt: Statement, from first: Int32) throws -> Int32 {
            var i = first
            for attribute in Schema.indexedAttributes {
                try stmt.bind(i, index[attribute])
                i += 1
            }
            return i
        }
    }

    /// Which rows a statement applies to.
    struct Filter {
        /// nil: every class (dump, counts).
        var itemClass: ItemClass?
        /// One access group, already authorized.
        var group: String?
        /// The groups the caller may see; nil for the owner, who sees all.
        var visibleGroups: [String]?
        var ref: [UInt8]?
        var protectionClass: ProtectionClass?
        /// Attribute equalities by digest; nil: the empty value.
        var digests: [(Attribute, Int64?)] = []

        /// SQL and bindings; the parameters are numbered in order.
        fileprivate func condition() -> (String, [Binding]) {
            var conditions: [String] = []
            var bindings: [Binding] = []
            func parameter(_ b: Binding) -> String {
                bindings.append(b)
                return "?\(bindings.count)"
            }
            if let itemClass { conditions.append("cls = " + parameter(.text(itemClass.rawValue))) }
            if let group { conditions.append("agrp = " + parameter(.text(group))) }
            if let visibleGroups {
                // Items in other apps' groups are invisible: not found, not counted, not dumped.
                conditions.append("agrp IN (" + visibleGroups.map { parameter(.text($0)) }.joined(with: ", ") + ")")
            }
            if let ref { conditions.append("ref = " + parameter(.blob(ref))) }
            if let protectionClass { conditions.append("pdmn = " + parameter(.text(protectionClass.rawValue))) }
            for (attribute, digest) in digests {
                let column = Schema.indexColumn(attribute)
                if let digest { conditions.append("\(column) = " + parameter(.int(digest))) } else { conditions.append("\(column) IS NULL") }
            }
            return (conditions.isEmpty ? "1" : conditions.joined(with: " AND "), bindings)
        }
    }

    fileprivate enum Binding {
        case text(String), blob([UInt8]), int(Int64)
    }

    private func prepare(_ sql: String, _ bindings: [Binding]) throws -> Statement {
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

    func select(_ filter: Filter, data: Bool) throws -> Cursor {
        let (condition, bindings) = filter.condition()
        return Cursor(try prepare("SELECT \(Row.columns(data: data)) FROM items WHERE \(condition) ORDER BY id", bindings))
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
    func classesAndGroups(_ filter: Filter) throws -> [(String, String)] {
        let (condition, bindings) = filter.condition()
        let stmt = try prepare("SELECT DISTINCT pdmn, agrp FROM items WHERE \(condition)", bindings)
        var pairs: [(String, String)] = []
        while try stmt.step() { pairs.append((stmt.text(0), stmt.text(1))) }
        return pairs
    }

    /// How many rows `filter` matches, by protection class code.
    func countByProtectionClass(_ filter: Filter) throws -> [String: Int] {
        let (condition, bindings) = filter.condition()
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
        fileprivate init(_ stmt: Statement) { self.stmt = stmt }

        /// Inserts one row; errSecDuplicateItem when its primary key exists in its class and group.
        func insert(ref: [UInt8], itemClass: ItemClass, accessible: ProtectionClass, group: String,
                    digests: Digests, attributes: [UInt8], data: [UInt8]) throws {
            stmt.reset()
            try stmt.bind(1, ref)
            try stmt.bind(2, itemClass.rawValue)
            try stmt.bind(3, accessible.rawValue)
            try stmt.bind(4, group)
            try stmt.bind(5, digests.primaryKey)
            let i = try digests.bindIndex(stmt, from: 6)
            try stmt.bind(i, attributes)
            try stmt.bind(i + 1, data)
            _ = try stmt.step()
        }
    }

    func prepareInsert() throws -> Inserter {
        let columns = Schema.indexedAttributes.map(Schema.indexColumn)
        return Inserter(try database.prepare("""
            INSERT INTO items(ref, cls, pdmn, agrp, pk, \(columns.joined(with: ", ")), attrs, data)
            VALUES (?, ?, ?, ?, ?, \(columns.map { _ in "?" }.joined(with: ", ")), ?, ?)
            """))
    }

    /// A prepared UPDATE of one row's group, digests and sealed values.
    final class Updater {
        fileprivate let stmt: Statement
        fileprivate init(_ stmt: Statement) { self.stmt = stmt }

        func update(id: Int64, group: String, digests: Digests, attributes: [UInt8], data: [UInt8]) throws {
            stmt.reset()
            try stmt.bind(1, group)
            try stmt.bind(2, digests.primaryKey)
            let i = try digests.bindIndex(stmt, from: 3)
            try stmt.bind(i, attributes)
            try stmt.bind(i + 1, data)
            try stmt.bind(i + 2, id)
            _ = try stmt.step()
        }
    }

    func prepareUpdate() throws -> Updater {
        let columns = Schema.indexedAttributes.map(Schema.indexColumn)
        return Updater(try database.prepare("""
            UPDATE items SET agrp = ?, pk = ?, \(columns.map { "\($0) = ?" }.joined(with: ", ")), attrs = ?, data = ?
            WHERE id = ?
            """))
    }

    /// Deletes every row `filter` matches; returns how many.
    func delete(_ filter: Filter) throws -> Int {
        let (condition, bindings) = filter.condition()
        _ = try prepare("DELETE FROM items WHERE \(condition)", bindings).step()
        return database.changes
    }
}
