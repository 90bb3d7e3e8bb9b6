import LocketSupport

/// Every statement on the `meta` and `keybag` tables (the header).
enum MetaStore {
    /// Reads every meta and keybag row.
    static func read(_ db: Database) throws -> Header {
        // Sized for a header as this release writes it (12 meta rows, 10
        // keybag rows): growing from empty rehashed each table four times.
        var header = Header(meta: Dictionary(minimumCapacity: 16), keybag: Dictionary(minimumCapacity: 16))
        let m = try db.prepare("SELECT name, value FROM meta")
        while try m.step() { header.meta[m.text(0)] = m.blob(1) }
        let k = try db.prepare("SELECT class, kek, device FROM keybag")
        while try k.step() {
            header.keybag[k.text(0)] = KeybagRow(kek: k.isNull(1) ? nil : k.blob(1), device: k.isNull(2) ? nil : k.blob(2))
        }
        return header
    }

    /// One meta row as it is in the file now, nil when absent.
    static func value(_ db: Database, _ name: String) throws -> [UInt8]? {
        let stmt = try db.prepare("SELECT value FROM meta WHERE name = ?")
        try stmt.bind(1, name)
        return try stmt.step() ? stmt.blob(0) : nil
    }

    /// Writes meta rows (insert or replace).
    static func write(_ db: Database, _ values: [(MetaKey, [UInt8])]) throws {
        try write(db, named: values.map { ($0.0.rawValue, $0.1) })
    }

    /// Writes meta rows by name: the header's own rows, as Header hands them over.
    static func write(_ db: Database, named values: [(String, [UInt8])]) throws {
        let stmt = try db.prepare("INSERT OR REPLACE INTO meta(name, value) VALUES (?, ?)")
        for (name, value) in values {
            stmt.reset()
            try stmt.bind(1, name)
            try stmt.bind(2, value)
            _ = try stmt.step()
        }
    }

    static func remove(_ db: Database, _ name: String) throws {
        let stmt = try db.prepare("DELETE FROM meta WHERE name = ?")
        try stmt.bind(1, name)
        _ = try stmt.step()
    }

    /// Writes every row of `bag` (insert or replace); with `replacingAll`,
    /// rows of classes `bag` no longer has are removed first.
    static func writeKeybag(_ db: Database, _ bag: Keybag, replacingAll: Bool = false) throws {
        if replacingAll { try db.execute("DELETE FROM keybag") }
        let stmt = try db.prepare("INSERT OR REPLACE INTO keybag(class, kek, device) VALUES (?, ?, ?)")
        for (name, row) in bag.rows {
            stmt.reset()
            try stmt.bind(1, name)
            if let kek = row.kek { try stmt.bind(2, kek) } else { try stmt.bindNull(2) }
            if let device = row.device { try stmt.bind(3, device) } else { try stmt.bindNull(3) }
            _ = try stmt.step()
        }
    }

    static func removeKeybagRow(_ db: Database, _ name: String) throws {
        let stmt = try db.prepare("DELETE FROM keybag WHERE class = ?")
        try stmt.bind(1, name)
        _ = try stmt.step()
    }
}
