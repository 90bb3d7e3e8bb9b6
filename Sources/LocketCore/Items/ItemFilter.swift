/// Which item rows an operation applies to, as the engine decides it: the
/// class, the one group named or the groups the caller may see, a
/// reference, a protection class, and blind-index digests of attribute
/// values (SPEC §7) and of free-form pairs (§18), never a value. Each backend renders it for its rows:
/// the file's SQLite condition, the shared database's PostgreSQL one, and a
/// match in memory for rows held outside a database (the offline cache).
/// All three select the same rows: they share `blindIndexTerms`.
package struct ItemFilter {
    /// nil: every class (dump, counts).
    var itemClass: ItemClass?
    /// One access group, already authorized.
    var group: String?
    /// The groups the caller may see; nil for the owner, who sees all.
    var visibleGroups: [String]?
    var ref: [UInt8]?
    var protectionClass: ProtectionClass?
    /// Attribute equalities by digest (the empty value has one too).
    var terms: [Term] = []
    /// The primary-key digest, when the query gives every primary-key attribute.
    var primaryKey: [UInt8]?
    /// Free-form attribute equalities by digest (SPEC §18): each (name,
    /// value) pair has its own blind row, in format 2 only.
    var freeForm: [Int64] = []
    /// Blind rows a matching item must not have: the synchronizable mark,
    /// when a query finds only items that are not synchronizable and no
    /// primary-key digest already says so (SPEC §4).
    var excluded: [Int64] = []

    /// One attribute equality.
    struct Term {
        var attribute: Attribute
        /// The blind index of the value (of "" for the empty value).
        var digest: Int64
        var isEmpty: Bool
    }

    /// The terms a blind index (a row per attribute of the item's class,
    /// and the synchronizable mark) must hold, or nil when no row can match. The primary-key digest
    /// covers the terms of its attributes. An attribute the class lacks has
    /// no rows: its empty value matches every item (as format 1's NULL did),
    /// any other value none. Ordered for a query planner without statistics:
    /// the likeliest to be selective first, a value before an empty one
    /// (shared by most items), and an account (often shared) after any other value.
    func blindIndexTerms() -> [Term]? {
        var terms = self.terms
        if let itemClass {
            if primaryKey != nil { terms.removeAll { itemClass.primaryKey.contains($0.attribute) } }
            if terms.contains(where: { !Self.indexed($0.attribute, itemClass) && !$0.isEmpty }) { return nil }
            terms.removeAll { !Self.indexed($0.attribute, itemClass) }
        }
        terms.sort { Self.rank($0) < Self.rank($1) }
        return terms
    }

    static func rank(_ term: Term) -> Int { term.isEmpty ? 2 : term.attribute == .account ? 1 : 0 }

    /// Whether items of `itemClass` have blind rows for `attribute`: every
    /// attribute of the class, and the synchronizable mark of those that are.
    static func indexed(_ attribute: Attribute, _ itemClass: ItemClass) -> Bool {
        attribute == .synchronizable || itemClass.attributes.contains(attribute)
    }

    /// Whether a row held in memory is one the SQL condition would select:
    /// the same terms, evaluated on the row's columns and blind digests.
    package func matches(itemClass rowClass: String, group rowGroup: String, ref rowRef: [UInt8], protectionClass rowProtection: String,
                 primaryKey rowKey: [UInt8], digests: Set<Int64>) -> Bool {
        if let itemClass, rowClass != itemClass.rawValue { return false }
        if let group, rowGroup != group { return false }
        if let visibleGroups, !visibleGroups.contains(rowGroup) { return false }
        if let ref, rowRef != ref { return false }
        if let protectionClass, rowProtection != protectionClass.rawValue { return false }
        if let primaryKey, rowKey != primaryKey { return false }
        guard let terms = blindIndexTerms() else { return false }
        return terms.allSatisfy { digests.contains($0.digest) } && freeForm.allSatisfy { digests.contains($0) }
            && !excluded.contains(where: digests.contains)
    }
}
