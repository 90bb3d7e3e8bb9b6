import LocketSupport

/// Where a keychain lives: its header (meta rows and keybag), its item
/// rows, the transaction they are read and written in, and what that place
/// decides about the keychain (`StoragePolicy`). `Keychain` holds one and
/// never asks which kind it is: a new place to keep keychains is a folder
/// under Backends/ with a type that conforms, not a branch in the engine.
///
/// Every read and write of the header and of the items runs inside
/// `transaction`; between calls a storage may let go of what it holds.
package protocol KeychainStorage: AnyObject {
    /// Where the keychain is, for messages: a path, a URL.
    var address: String { get }
    /// What holds it, named in messages about damage ("the file was altered").
    var medium: String { get }
    /// What this place decides about the keychain.
    var policy: StoragePolicy { get }
    /// How the header's MAC covers the keybag as this place stores it.
    var headerLayout: Header.Layout { get }

    // MARK: - Transactions

    /// Runs `body` in one transaction, committed if it returns; a call
    /// inside an open transaction joins it. `body` may run more than once
    /// (a storage that retries conflicts), so it has no effect outside.
    func transaction(write: Bool, _ body: () throws -> Void) throws

    // MARK: - The header, inside a transaction

    /// Every meta and keybag row as stored now.
    func readHeader() throws -> Header
    /// One meta row as stored now, nil when absent.
    func readMeta(_ name: String) throws -> [UInt8]?
    /// Writes meta rows (insert or replace).
    func writeMeta(_ rows: [(String, [UInt8])]) throws
    func removeMeta(_ name: String) throws
    /// Writes every row of `keybag`; with `replacingAll`, rows it no longer has go first.
    func writeKeybag(_ keybag: Keybag, replacingAll: Bool) throws
    func removeKeybagRow(_ name: String) throws

    // MARK: - Items

    /// The item statements, in the open transaction.
    var itemStore: any ItemStoring { get }
    /// Runs `scan` over the item rows (`TypedItemStorage` implements it).
    func scan(_ scan: RowScan, for engine: KeychainEngine, _ visit: (ScannedItem) throws -> Bool) throws

    // MARK: - Wording (defaults below)

    /// What a search that matched nothing reports.
    func noMatch() -> KeychainError
    /// The refusal of an operation the place lacks (`policy.capabilities`).
    func unavailable(_ what: String) -> KeychainError

    // MARK: - Abilities some storages have (nil, the default, where it has none)

    /// It holds something between calls that others wait on (a file's lock).
    var hold: (any StorageHold)? { get }
    /// This machine keeps a record of the highest header generation seen.
    var rollbackRecords: (any RollbackRecords)? { get }
    /// Its own layout is brought up to date inside a write (a file's format).
    var layoutUpgrade: (any LayoutUpgrade)? { get }
    /// It prepares for a large write (an import).
    var bulkWrites: (any BulkWrites)? { get }
    /// Many devices share it, each opening only the access groups it was granted.
    var deviceGroups: (any DeviceGroups)? { get }
    /// Every read of a secret is recorded.
    var readAudit: (any ReadAudit)? { get }
    /// Password attempts on it take turns (where wrong passwords are counted).
    var passwordTurns: (any PasswordTurns)? { get }
}

extension KeychainStorage {
    package func noMatch() -> KeychainError { KeychainError(.itemNotFound) }
    package func unavailable(_ what: String) -> KeychainError { KeychainError(.notAvailable, "\(what) is not available for \(address)") }

    package var hold: (any StorageHold)? { nil }
    package var rollbackRecords: (any RollbackRecords)? { nil }
    package var layoutUpgrade: (any LayoutUpgrade)? { nil }
    package var bulkWrites: (any BulkWrites)? { nil }
    package var deviceGroups: (any DeviceGroups)? { nil }
    package var readAudit: (any ReadAudit)? { nil }
    package var passwordTurns: (any PasswordTurns)? { nil }
}

// MARK: - Abilities
//
// Small interfaces a storage hands out through its accessor above, as age's
// optional interfaces beside `Identity`. Where a storage has none, the engine
// does what a place without it needs (nothing held, no record, the class key
// as it is); a storage never writes a method that does nothing.
// Accessors, not `as?`: a first dynamic cast scans every protocol
// conformance of the static binary, and the find path asks three of them.

/// A storage that holds something between calls (a file's lock).
package protocol StorageHold: AnyObject {
    /// Lets go of what the storage holds, so that nothing waits on it while
    /// the caller waits; the next transaction takes it again.
    func release()
}

/// A storage for which this machine keeps the highest header generation it
/// has seen (SPEC §7 "Rollback").
package protocol RollbackRecords: AnyObject {
    /// The record, authenticated with the device key or the blind-index key
    /// as the place allows; nil where none can be kept now (a file without
    /// its device secret).
    func generationMirror(keychainID: [UInt8], environment: Environment, device: SecureBytes?,
                          indexKey: SecureBytes) throws -> GenerationMirror?
}

/// A storage whose own layout may be older than this release writes (a
/// file of format 1).
package protocol LayoutUpgrade: AnyObject {
    /// Inside a write that seals the header, once the header as stored now
    /// has authenticated: the layout is brought up to date in the same transaction.
    func willWrite(_ header: Header, indexKey: SecureBytes) throws
    /// What a write that seals the header reports when the blind-index key
    /// is not available (`error`, the key cache's own reason).
    func writeRefused(_ error: KeychainError) -> KeychainError
}

/// A storage that prepares for a large write.
package protocol BulkWrites: AnyObject {
    /// A large write follows in this transaction (an import).
    func willImport() throws
}

/// A storage many devices share, each opening only the access groups it
/// was granted, which holds no item bound to one device.
package protocol DeviceGroups: AnyObject {
    /// The key an item's field keys derive from, given its class key's key
    /// for the item's group: that key mixed with the key this device holds
    /// for the group. Without the ability: the class key's key as it is.
    func sealingKey(_ classGroupKey: SecureBytes, group: String) throws -> SecureBytes
    /// Whether this machine can open items of `group` at all: a listing
    /// leaves out the groups it can't, as it leaves out other apps' groups.
    func canOpen(group: String) throws -> Bool
    /// Refuses an item of `pclass` the place can't hold.
    func admit(_ pclass: ProtectionClass) throws
}

/// A storage that records every read of a secret.
package protocol ReadAudit: AnyObject {
    /// Records that the secret of the item `ref` was read, in the open
    /// transaction: a secret is handed out only once this returns. One item
    /// a call: a list of references would build its array type's metadata
    /// at run time in every `find -w`.
    func recordRead(_ ref: [UInt8]) throws
}

/// A storage whose item statements are one type, `Items`: the row scan is
/// the engine's one loop specialized for it, so a lookup runs no existential
/// per row and builds no generic metadata (callgrind, bench/README.md).
/// The associated type lives here, not in `KeychainStorage`, which the
/// engine holds as an existential: one with an associated type has its
/// metadata and the keychain object's layout built at run time, by every command.
package protocol TypedItemStorage: KeychainStorage {
    associatedtype Items: ItemStoring
    var items: Items { get }
}

extension TypedItemStorage {
    package var itemStore: any ItemStoring { items }

    package func scan(_ scan: RowScan, for engine: KeychainEngine, _ visit: (ScannedItem) throws -> Bool) throws {
        try engine.run(scan, over: items, visit)
    }
}

/// A storage that counts wrong passwords
/// (`StoragePolicy.countsPasswordFailures`): their attempts take turns, so
/// that the count and the wait of each are decided after the last one's
/// verdict, never side by side (SPEC §5; Keychain+PasswordAttempts).
package protocol PasswordTurns: AnyObject {
    /// Waits until no other password attempt on this keychain is being
    /// checked, by any process or thread, and returns this attempt's turn:
    /// it ends when the object goes, or with the process, so a killed one
    /// holds nothing. `busy` is called before waiting for another's turn.
    func passwordTurn(busy: () -> Void) throws -> AnyObject
}

extension KeychainStorage {
    package func readMeta(_ key: MetaKey) throws -> [UInt8]? { try readMeta(key.rawValue) }
    package func writeMeta(_ rows: [(MetaKey, [UInt8])]) throws { try writeMeta(rows.map { ($0.0.rawValue, $0.1) }) }
    package func removeMeta(_ key: MetaKey) throws { try removeMeta(key.rawValue) }
}
