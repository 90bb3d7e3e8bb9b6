import LocketSupport

// Which rows a query names, as SQL for each keychain format: the one place
// besides the writers that knows the columns of format 1 and the blind rows of format 2.
extension ItemStore {
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
        /// Attribute equalities by digest (the empty value has one too).
        var digests: [Term] = []
        /// The primary-key digest, when the query gives every primary-key attribute.
        var primaryKey: [UInt8]?
        /// Free-form attribute equalities by digest (SPEC §18; format 2 only).
        var free: [Int64] = []

        /// One attribute equality.
        struct Term {
            var attribute: Attribute
            /// The blind index of the value (of "" for the empty value).
            var digest: Int64
            var isEmpty: Bool
        }

        private func rank(_ term: Term) -> Int { term.isEmpty ? 2 : term.attribute == .account ? 1 : 0 }

        /// SQL and bindings for a file of `format` (or a remote keychain, in
        /// `dialect`); the parameters are numbered in order.
        func condition(format: Int64, dialect: SQLDialect = .sqlite) -> (String, [Binding]) {
            var conditions: [String] = []
            var bindings: [Binding] = []
            func parameter(_ b: Binding) -> String {
                bindings.append(b)
                return "\(dialect.parameter)\(bindings.count)"
            }
            if let itemClass { conditions.append("cls = " + parameter(.text(itemClass.rawValue))) }
            if let group { conditions.append("agrp = " + parameter(.text(group))) }
            if let visibleGroups {
                // Items in other apps' groups are invisible: not found, not counted, not dumped.
                conditions.append("agrp IN (" + visibleGroups.map { parameter(.text($0)) }.joined(with: ", ") + ")")
            }
            if let ref { conditions.append("ref = " + parameter(.blob(ref))) }
            if let protectionClass { conditions.append("pdmn = " + parameter(.text(protectionClass.rawValue))) }
            if format == 1 {
                // Format 1 has no free-form rows: no item of it has such an attribute.
                if !free.isEmpty { conditions.append(dialect.never) }
                for term in digests {
                    let column = Schema.indexColumn(term.attribute)
                    conditions.append(term.isEmpty ? "\(column) IS NULL" : "\(column) = " + parameter(.int(term.digest)))
                }
            } else {
                var terms = digests
                if let primaryKey {
                    conditions.append("pk = " + parameter(.blob(primaryKey)))
                    if let itemClass { terms.removeAll { itemClass.primaryKey.contains($0.attribute) } }
                }
                // An attribute the class lacks has no rows: its empty value matches every item (as format 1's NULL did), any other none.
                if let itemClass {
                    if terms.contains(where: { !itemClass.attributes.contains($0.attribute) && !$0.isEmpty }) { conditions.append(dialect.never) }
                    terms.removeAll { !itemClass.attributes.contains($0.attribute) }
                }
                // One term drives (its rows give the candidate ids), the others are
                // probes of (digest, item). Without statistics, the likeliest to be
                // selective drives: a value before an empty one (shared by most
                // items), and an account (often shared) after any other value.
                terms.sort { rank($0) < rank($1) }
                // A free-form pair is a value: after the other values, before an account or an empty value.
                // (No key path nor new array type here: each is run-time metadata on `find`'s path.)
                let values = terms.firstIndex { rank($0) > 0 } ?? terms.count
                var i = 0
                func probe(_ termDigest: Int64) {
                    let digest = parameter(.int(termDigest))
                    conditions.append(i == 0 ? "id IN (SELECT item FROM \(dialect.blind) WHERE digest = \(digest))"
                                             : "EXISTS (SELECT 1 FROM \(dialect.blind) WHERE digest = \(digest) AND item = items.id)")
                    i += 1
                }
                for k in 0..<values { probe(terms[k].digest) }
                for digest in free { probe(digest) }
                for k in values..<terms.count { probe(terms[k].digest) }
            }
            return (conditions.isEmpty ? dialect.always : conditions.joined(with: " AND "), bindings)
        }
    }
}

extension ItemStore.Filter {
    /// Whether a remote keychain's cached row is one `condition` (format 2)
    /// would select: the same terms, evaluated on the row (offline reads, docs/REMOTE.md).
    func matches(_ row: RemoteCache.Row) -> Bool {
        if let itemClass, row.itemClass != itemClass.rawValue { return false }
        if let group, row.group != group { return false }
        if let visibleGroups, !visibleGroups.contains(row.group) { return false }
        if let ref, row.ref != ref { return false }
        if let protectionClass, row.protectionClass != protectionClass.rawValue { return false }
        var terms = digests
        if let primaryKey {
            guard row.primaryKey == primaryKey else { return false }
            if let itemClass { terms.removeAll { itemClass.primaryKey.contains($0.attribute) } }
        }
        if let itemClass {
            if terms.contains(where: { !itemClass.attributes.contains($0.attribute) && !$0.isEmpty }) { return false }
            terms.removeAll { !itemClass.attributes.contains($0.attribute) }
        }
        return terms.allSatisfy { row.digests.contains($0.digest) }
    }
}

/// What differs between SQLite's SQL and PostgreSQL's in a filter's condition.
struct SQLDialect {
    /// The prefix of a numbered parameter.
    let parameter: String
    /// The blind-index table's name.
    let blind: String
    /// A condition that holds for no row, and one that holds for every row.
    let never: String
    let always: String

    static let sqlite = SQLDialect(parameter: "?", blind: "blind", never: "0", always: "1")
    /// A remote keychain's (RemoteSchema): tables in the schema `locket`.
    static let postgres = SQLDialect(parameter: "$", blind: "locket.blind", never: "false", always: "true")
}
