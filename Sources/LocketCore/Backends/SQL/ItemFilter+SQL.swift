import LocketSupport

// The condition of an item filter over format 2's tables, which both SQL
// backends share: `items(id, ref, cls, pdmn, agrp, pk, ...)` and
// `blind(digest, item)`. Values only ever go as numbered parameters.

/// A value bound to a statement's parameter.
package enum SQLValue {
    case text(String), blob([UInt8]), int(Int64)
}

/// What differs between SQLite's SQL and PostgreSQL's in a condition.
package struct SQLDialect {
    /// The prefix of a numbered parameter.
    let parameter: String
    /// The blind-index table's name.
    let blind: String
    /// A condition that holds for no row, and one that holds for every row.
    let never: String
    let always: String

    static let sqlite = SQLDialect(parameter: "?", blind: "blind", never: "0", always: "1")
    /// The shared database's (RemoteSchema): tables in the schema `locket`.
    package static let postgres = SQLDialect(parameter: "$", blind: "locket.blind", never: "false", always: "true")
}

/// A WHERE clause being built: conditions joined by AND, their values bound
/// as parameters numbered in order.
package struct SQLCondition {
    let dialect: SQLDialect
    private(set) var conditions: [String] = []
    package private(set) var bindings: [SQLValue] = []

    init(_ dialect: SQLDialect) { self.dialect = dialect }

    /// Binds `value` to the next parameter and returns its name.
    mutating func parameter(_ value: SQLValue) -> String {
        bindings.append(value)
        return "\(dialect.parameter)\(bindings.count)"
    }

    mutating func append(_ condition: String) { conditions.append(condition) }

    /// The conditions joined by AND. SQLite's parser nests `a AND b AND c`
    /// a level per term and refuses past 1,000 levels (SQLITE_MAX_EXPR_DEPTH:
    /// a search of 993 free-form attributes failed as a damaged keychain), so
    /// a long list goes in parenthesized groups, as deep as a group is long
    /// plus their number. The planner sees the same terms: it splits nested
    /// ANDs into one list.
    package var sql: String {
        let group = SQLCondition.groupSize
        guard conditions.count > group else { return conditions.isEmpty ? dialect.always : conditions.joined(with: " AND ") }
        return stride(from: 0, to: conditions.count, by: group).map {
            "(" + Array(conditions[$0..<min($0 + group, conditions.count)]).joined(with: " AND ") + ")"
        }.joined(with: " AND ")
    }

    static let groupSize = 32
}

extension ItemFilter {
    /// The conditions on the row's own columns, the same in every format.
    func appendRowConditions(to c: inout SQLCondition) {
        if let itemClass { c.append("cls = " + c.parameter(.text(itemClass.rawValue))) }
        if let group { c.append("agrp = " + c.parameter(.text(group))) }
        if let visibleGroups {
            // Items in other apps' groups are invisible: not found, not counted, not dumped.
            c.append("agrp IN (" + visibleGroups.map { c.parameter(.text($0)) }.joined(with: ", ") + ")")
        }
        if let ref { c.append("ref = " + c.parameter(.blob(ref))) }
        if let protectionClass { c.append("pdmn = " + c.parameter(.text(protectionClass.rawValue))) }
    }

    /// The whole condition over format 2's tables, in `dialect`.
    package func condition(_ dialect: SQLDialect) -> SQLCondition {
        var c = SQLCondition(dialect)
        appendRowConditions(to: &c)
        if let primaryKey { c.append("pk = " + c.parameter(.blob(primaryKey))) }
        guard let terms = blindIndexTerms() else {
            c.append(dialect.never)
            return c
        }
        // One term drives (its rows give the candidate ids), the others are
        // probes of (digest, item). A free-form pair is a value: after the
        // other values, before an account or an empty value. (No key path
        // nor new array type here: each is run-time metadata on `find`'s path.)
        let values = terms.firstIndex { ItemFilter.rank($0) > 0 } ?? terms.count
        var i = 0
        func probe(_ termDigest: Int64) {
            let digest = c.parameter(.int(termDigest))
            c.append(i == 0 ? "id IN (SELECT item FROM \(dialect.blind) WHERE digest = \(digest))"
                            : "EXISTS (SELECT 1 FROM \(dialect.blind) WHERE digest = \(digest) AND item = items.id)")
            i += 1
        }
        for k in 0..<values { probe(terms[k].digest) }
        for digest in freeForm { probe(digest) }
        for k in values..<terms.count { probe(terms[k].digest) }
        for digest in excluded {
            c.append("NOT EXISTS (SELECT 1 FROM \(dialect.blind) WHERE digest = \(c.parameter(.int(digest))) AND item = items.id)")
        }
        return c
    }
}
