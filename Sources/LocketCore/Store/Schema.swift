import LocketSupport

/// The keychain file's tables. Plaintext columns are limited to what SPEC §7
/// allows: item class, protection class, access group, persistent reference,
/// and keyed digests; every attribute value and the secret are sealed.
enum Schema {
    static let format: Int64 = 1

    /// The attributes format 1 keeps a blind-index column for, frozen: the
    /// file's columns, not whatever Attribute lists today.
    static let indexedAttributes: [Attribute] = [
        .account, .service, .label, .description, .comment, .generic, .creator, .type,
        .server, .securityDomain, .protocol, .authenticationType, .port, .path,
    ]

    /// The blind-index column of an attribute in format 1.
    static func indexColumn(_ attribute: Attribute) -> String { "i_" + attribute.code }

    static var statements: [String] {
        let indexColumns = indexedAttributes.map(indexColumn)
        return [
            "CREATE TABLE meta(name TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID",
            "CREATE TABLE keybag(class TEXT PRIMARY KEY, kek BLOB, device BLOB) WITHOUT ROWID",
            """
            CREATE TABLE items(
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                ref BLOB NOT NULL UNIQUE,
                cls TEXT NOT NULL,
                pdmn TEXT NOT NULL,
                agrp TEXT NOT NULL,
                pk BLOB NOT NULL,
                \(indexColumns.map { "\($0) INTEGER" }.joined(with: ",\n    ")),
                attrs BLOB NOT NULL,
                data BLOB NOT NULL,
                UNIQUE(cls, agrp, pk))
            """,
            "CREATE INDEX items_pdmn ON items(pdmn, agrp)",
        ] + indexColumns.map {
            // Partial: empty values (NULL digests) are the common case for most
            // attributes and never worth an index entry.
            "CREATE INDEX items_\($0) ON items(\($0)) WHERE \($0) IS NOT NULL"
        }
    }
}
