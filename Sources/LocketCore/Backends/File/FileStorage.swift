import LocketSupport

/// A keychain file (SPEC §7): one SQLite connection, open only while a
/// transaction runs (`Database`); the header in the `meta` and `keybag`
/// tables (`MetaStore`); the items in format 2's tables, or format 1's until
/// the first write migrates them (`ItemStore`).
final class FileStorage: TypedItemStorage {
    let database: Database
    /// The file's format (SPEC §7): 1 until the first write migrates it.
    var format: Int64
    /// Tests that fill a format-1 file to migrate turn the migration off.
    var migratesOnWrite = true

    init(database: Database, format: Int64) {
        self.database = database
        self.format = format
    }

    /// What a file decides: everything, for the device it is on.
    static let policy = StoragePolicy(
        capabilities: [.changePassword, .rotateKeys, .settings, .importItems, .addMissingKeys, .freeFormAttributes],
        countsPasswordFailures: true, wrapsKeysForDevice: true, requiresPassword: false, requiresAuthenticatedHeader: false,
        advancesHeaderOnEveryWrite: true, readsManyInOneTransaction: true, rowsMayBeHeld: true, format: KeychainFormat.current)

    var address: String { database.path }
    var medium: String { "file" }
    var policy: StoragePolicy { Self.policy }
    var headerLayout: Header.Layout { .tables }

    // MARK: - Transactions

    func transaction(write: Bool, _ body: () throws -> Void) throws {
        if database.inTransaction { return try body() }
        let formatBefore = format
        do {
            try database.transaction(write: write) {
                if !write { try refreshFormat() }
                try body()
            }
        } catch {
            // A migration rolled back with the rest of its transaction.
            format = formatBefore
            throw error
        }
    }


    /// Inside a read transaction on a file that was of format 1 at open:
    /// another process may have migrated it since (a format-2 file is never
    /// turned back, so nothing is read once it is current).
    private func refreshFormat() throws {
        guard format < KeychainFormat.current, let encoded = try MetaStore.value(database, MetaKey.format.rawValue),
              encoded.count == 8 else { return }
        format = BigEndian.int64(encoded)
    }

    // MARK: - The header

    func readHeader() throws -> Header { try MetaStore.read(database) }
    func readMeta(_ name: String) throws -> [UInt8]? { try MetaStore.value(database, name) }
    func writeMeta(_ rows: [(String, [UInt8])]) throws { try MetaStore.write(database, named: rows) }
    func removeMeta(_ name: String) throws { try MetaStore.remove(database, name) }
    func writeKeybag(_ keybag: Keybag, replacingAll: Bool) throws { try MetaStore.writeKeybag(database, keybag, replacingAll: replacingAll) }
    func removeKeybagRow(_ name: String) throws { try MetaStore.removeKeybagRow(database, name) }

    // MARK: - Items

    var items: ItemStore { ItemStore(database: database, format: format) }

    // MARK: - Abilities

    var hold: (any StorageHold)? { self }
    var rollbackRecords: (any RollbackRecords)? { self }
    var layoutUpgrade: (any LayoutUpgrade)? { self }
    var bulkWrites: (any BulkWrites)? { self }
    var passwordTurns: (any PasswordTurns)? { self }
}

extension FileStorage: StorageHold {
    /// Closes the connection (and so lets go of the file's exclusive lock).
    func release() { database.close() }
}

extension FileStorage: RollbackRecords {
    /// Per path and authenticated with the device key (GenerationMirror):
    /// none without a device secret.
    func generationMirror(keychainID: [UInt8], environment: Environment, device: SecureBytes?,
                          indexKey: SecureBytes) throws -> GenerationMirror? {
        guard let device else { return nil }
        return try GenerationMirror(environment: environment, keychainID: keychainID, keychainPath: address, device: device)
    }
}

extension FileStorage: LayoutUpgrade {
    /// Format 1 -> 2 (SPEC §7), inside the write's transaction: the new
    /// format is sealed into the header with the rest, and a kill before the
    /// commit leaves the file as it was. Needs the blind-index key for the
    /// digest of the empty value; everything else moves by SQL without
    /// opening a value.
    func willWrite(_ header: Header, indexKey: SecureBytes) throws {
        // Another process may have migrated the file since it was opened.
        format = header.meta.integer(.format) ?? format
        guard format < KeychainFormat.current && migratesOnWrite else { return }
        try ItemStore.migrateToFormat2(database) { Sealing.indexDigest(indexKey, $0, $1, []) }
        try MetaStore.write(database, named: [(MetaKey.format.rawValue, BigEndian.bytes(KeychainFormat.current))])
        format = KeychainFormat.current
    }

    func writeRefused(_ error: KeychainError) -> KeychainError {
        guard format < KeychainFormat.current else { return error }
        return KeychainError(error.code, "\(address) is a keychain of format \(format); upgrading it to format \(KeychainFormat.current) needs its keys",
                             reason: .upgradeNeedsUnlock)
    }
}

extension FileStorage: BulkWrites {
    /// SQLite's default 2 MiB page cache spills a big transaction's dirty
    /// pages to the WAL and reads them back; 16 MiB (a bound, whatever the
    /// backup's size) makes a 100 k-item restore about a sixth faster. Set
    /// inside the transaction: the connection closes after it.
    func willImport() throws { try database.execute("PRAGMA cache_size=-16384") }
}

extension StoragePolicy {
    /// What a keychain file decides (for the locator, which asks before it opens one).
    package static var file: StoragePolicy { FileStorage.policy }
}
