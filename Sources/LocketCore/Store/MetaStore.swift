import LocketSupport

/// The names of the `meta` table's rows. The table stays keyed by text (the
/// header MAC covers every row by name, including rows a newer release
/// adds), but the engine names a row only through this enum.
enum MetaKey: String, CaseIterable {
    /// The keychain format (SPEC §7), 8 bytes big-endian.
    case format
    /// The keychain's random identity (16 bytes).
    case id
    /// A fingerprint of the device key the device-bound class keys are wrapped for.
    case deviceFingerprint = "device_fp"
    /// The Argon2id parameters; absent on a keychain without a password.
    case kdf
    /// The default auto-lock timeout in seconds.
    case timeout
    /// Consecutive wrong passwords.
    case failures
    /// When the last wrong password was given, in seconds (older releases) and milliseconds.
    case failedAt = "failed_at"
    case failedAtMilliseconds = "failed_at_ms"
    /// Device-bound items with ids up to this one belong to an earlier device.
    case thisDeviceOnlyBoundary = "tdo_boundary"
    /// The header's write generation, key check and MAC (Header.swift).
    case generation
    case keyCheck = "key_check"
    case headerMAC = "header_mac"
    /// The public keys of the presence key pairs (PresenceKeys): user-presence and password-current-set.
    case presencePublicKey = "upk_pub"
    case currentSetPublicKey = "pcs_pub"
    /// Seconds one proof of presence serves the same terminal session (`settings --presence-reuse`).
    case presenceReuse = "presence_reuse"
    /// Present once an item unique by reference was added (FreeForm): a query
    /// giving the whole primary key may then match more than the one item
    /// its digest names, so lookups go through the blind rows instead.
    case uniqueByReference = "unique_by_ref"
}

extension Dictionary where Key == String, Value == [UInt8] {
    /// The row named by `key`.
    subscript(_ key: MetaKey) -> [UInt8]? {
        get { self[key.rawValue] }
        set { self[key.rawValue] = newValue }
    }

    /// The row named by `key` as a big-endian integer, nil when absent.
    func integer(_ key: MetaKey) -> Int64? { self[key].map(BigEndian.int64) }
}

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
    static func value(_ db: Database, _ key: MetaKey) throws -> [UInt8]? {
        let stmt = try db.prepare("SELECT value FROM meta WHERE name = ?")
        try stmt.bind(1, key.rawValue)
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

    static func remove(_ db: Database, _ key: MetaKey) throws {
        let stmt = try db.prepare("DELETE FROM meta WHERE name = ?")
        try stmt.bind(1, key.rawValue)
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
