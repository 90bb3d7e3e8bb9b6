import LocketSupport

/// The keychain file's tables. Plaintext columns are limited to what SPEC §7
/// allows: item class, protection class, access group, persistent reference,
/// and keyed digests; every attribute value and the secret are sealed.
enum Schema {
    /// The format new keychains get and writes migrate to.
    static let format = KeychainFormat.current

    /// The attributes format 1 keeps a blind-index column for, frozen: the
    /// file's columns, not whatever Attribute lists today.
    static let indexedAttributes: [Attribute] = [
        .account, .service, .label, .description, .comment, .generic, .creator, .type,
        .server, .securityDomain, .protocol, .authenticationType, .port, .path,
    ]

    /// The blind-index column of an attribute in format 1.
    static func indexColumn(_ attribute: Attribute) -> String { "i_" + attribute.code }

    static let metaTables = [
        "CREATE TABLE meta(name TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID",
        "CREATE TABLE keybag(class TEXT PRIMARY KEY, kek BLOB, device BLOB) WITHOUT ROWID",
    ]

    /// Format 2's items table, under `name` (the migration builds it aside first).
    /// AUTOINCREMENT: ids are never reused (ThisDeviceOnly items of an earlier
    /// device are told apart by `id <= tdo_boundary`).
    /// Format 1 (tests of the migration only) had a digest column per indexed
    /// attribute between `pk` and `attrs`, and its uniqueness as a constraint.
    static func itemsTable(_ name: String, format1Columns: [String] = []) -> String {
        let middle = format1Columns.map { "\($0) INTEGER,\n    " }.joined()
        let unique = format1Columns.isEmpty ? "" : ",\n    UNIQUE(cls, agrp, pk)"
        return """
        CREATE TABLE \(name)(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            ref BLOB NOT NULL UNIQUE,
            cls TEXT NOT NULL,
            pdmn TEXT NOT NULL,
            agrp TEXT NOT NULL,
            pk BLOB NOT NULL,
            \(middle)attrs BLOB NOT NULL,
            data BLOB NOT NULL\(unique))
        """
    }

    /// Format 2's indexes and blind-index table: one row per (attribute digest,
    /// item) for every attribute of the item's class, the empty value included,
    /// so a new attribute or class adds rows, never a column or an index.
    static let format2Tail = [
        // pk first: a full primary-key lookup is one probe.
        "CREATE UNIQUE INDEX items_pk ON items(pk, cls, agrp)",
        "CREATE INDEX items_pdmn ON items(pdmn, agrp)",
        "CREATE TABLE blind(digest INTEGER NOT NULL, item INTEGER NOT NULL, PRIMARY KEY(digest, item)) WITHOUT ROWID",
        // Deleting or updating an item removes its rows without knowing its old values.
        "CREATE INDEX blind_item ON blind(item)",
    ]

    /// The statements that make a new, empty keychain of `format` (1 only for tests of the migration).
    static func statements(format: Int64 = Schema.format) -> [String] {
        if format == 2 { return metaTables + [itemsTable("items")] + format2Tail }
        let indexColumns = indexedAttributes.map(indexColumn)
        return metaTables + [
            itemsTable("items", format1Columns: indexColumns),
            "CREATE INDEX items_pdmn ON items(pdmn, agrp)",
        ] + indexColumns.map {
            // Partial: empty values (NULL digests) are the common case for most
            // attributes and never worth an index entry.
            "CREATE INDEX items_\($0) ON items(\($0)) WHERE \($0) IS NOT NULL"
        }
    }
}
