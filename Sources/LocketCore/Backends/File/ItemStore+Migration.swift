import LocketSupport

extension ItemStore {
    /// Turns a format-1 file into format 2, inside the caller's write
    /// transaction (so a kill at any instant leaves one format or the other):
    /// each `i_` column becomes blind rows, an empty value (NULL) the row of
    /// `emptyDigest` for its class and attribute; the items table is rebuilt
    /// without the columns and their indexes, keeping every id and the
    /// AUTOINCREMENT sequence (ids are never reused). The caller writes the
    /// new format into meta.
    static func migrateToFormat2(_ database: Database, emptyDigest: (ItemClass, Attribute) -> Int64) throws {
        try database.execute(Schema.format2Tail[2])
        let stmt = try database.prepare("SELECT DISTINCT cls FROM items")
        var classes: [ItemClass] = []
        while try stmt.step() { if let c = ItemClass(rawValue: stmt.text(0)) { classes.append(c) } }
        for itemClass in classes {
            for attribute in itemClass.attributes where Schema.indexedAttributes.contains(attribute) {
                let insert = try database.prepare("""
                    INSERT OR IGNORE INTO blind(digest, item) SELECT ifnull(\(Schema.indexColumn(attribute)), ?), id FROM items WHERE cls = ?
                    """)
                try insert.bind(1, emptyDigest(itemClass, attribute))
                try insert.bind(2, itemClass.rawValue)
                _ = try insert.step()
            }
        }
        try database.execute(Schema.itemsTable("items_v2"))
        try database.execute("""
            INSERT INTO items_v2(id, ref, cls, pdmn, agrp, pk, attrs, data)
            SELECT id, ref, cls, pdmn, agrp, pk, attrs, data FROM items ORDER BY id
            """)
        // The sequence may be above every id left (the newest items deleted): carry it over.
        try database.execute("DELETE FROM sqlite_sequence WHERE name = 'items_v2'")
        try database.execute("INSERT INTO sqlite_sequence(name, seq) SELECT 'items_v2', seq FROM sqlite_sequence WHERE name = 'items'")
        try database.execute("DROP TABLE items")
        try database.execute("ALTER TABLE items_v2 RENAME TO items")
        for sql in Schema.format2Tail where !sql.hasPrefix("CREATE TABLE blind") { try database.execute(sql) }
    }
}
