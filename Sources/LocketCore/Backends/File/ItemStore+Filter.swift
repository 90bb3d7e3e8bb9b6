import LocketSupport

// A filter as this file's SQL: format 2's condition (shared with the other
// SQL backend), or format 1's, the one place besides the writers that knows
// its index column per attribute.
extension ItemStore {
    /// The condition selecting what `filter` names, with its bindings.
    func condition(_ filter: ItemFilter) -> (String, [SQLValue]) {
        guard format == 1 else {
            let c = filter.condition(.sqlite)
            return (c.sql, c.bindings)
        }
        var c = SQLCondition(.sqlite)
        filter.appendRowConditions(to: &c)
        // Format 1 has no free-form rows: no item of it has such an attribute.
        if !filter.freeForm.isEmpty { c.append(SQLDialect.sqlite.never) }
        // Nor has it synchronizable items (a write migrates it first): the
        // mark excluded holds for every row, asked for holds for none.
        for term in filter.terms where term.attribute == .synchronizable && !term.isEmpty { c.append(SQLDialect.sqlite.never) }
        for term in filter.terms where term.attribute != .synchronizable {
            let column = Schema.indexColumn(term.attribute)
            c.append(term.isEmpty ? "\(column) IS NULL" : "\(column) = " + c.parameter(.int(term.digest)))
        }
        return (c.sql, c.bindings)
    }
}
