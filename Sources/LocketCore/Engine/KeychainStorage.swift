import LocketSupport

/// Where a keychain lives: its header (meta rows and keybag), its item
/// rows, the transaction they are read and written in, and what that place
/// decides about the keychain (`StoragePolicy`). `Keychain` holds one and
/// never asks which kind it is: a new place to keep keychains is a folder
/// under Backends/ with a type that conforms, not a branch in the engine.
///
/// Every read and write of the header and of the items runs inside
/// `transaction`; between calls a storage may let go of what it holds.
protocol KeychainStorage: AnyObject {
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
    /// Lets go of what the storage holds between calls (a file's lock), so
    /// that nothing waits on it while the caller waits; the next transaction takes it again.
    func release()

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

    /// This machine's record of the highest header generation it has seen
    /// here (SPEC §7 "Rollback"), authenticated with the device key or the
    /// blind-index key as the place allows; nil where none can be kept.
    func generationMirror(keychainID: [UInt8], environment: Environment, device: SecureBytes?,
                          indexKey: SecureBytes) throws -> GenerationMirror?

    // MARK: - Steps of the lifecycle that differ

    /// After the keychain object is made, before its keys are loaded: what
    /// the place keeps locally for it (a device's identity, reads to report).
    func didOpen(keychainID: [UInt8], environment: Environment) throws
    /// Inside a write that seals the header, once the header as stored now
    /// has authenticated: the place brings its own layout up to date (a
    /// file of an older format is migrated here, in the same transaction).
    func willWrite(_ header: Header, indexKey: SecureBytes) throws
    /// What a write that seals the header reports when the blind-index key
    /// is not available (`error`, the key cache's own reason).
    func writeRefused(_ error: KeychainError) -> KeychainError
    /// A large write follows in this transaction (an import).
    func willImport() throws

    // MARK: - Items

    /// The item statements, in the open transaction.
    var itemStore: any ItemStoring { get }
    /// The key an item's field keys derive from, given its class key's key
    /// for the item's group: that key as it is, or mixed with what else
    /// the place requires (a key the device must hold for the group).
    func sealingKey(_ classGroupKey: SecureBytes, group: String) throws -> SecureBytes
    /// Whether this machine can open items of `group` at all: a listing
    /// leaves out the groups it can't, as it leaves out other apps' groups.
    func canOpen(group: String) throws -> Bool
    /// Records that the secret of the item `ref` was read, in the open
    /// transaction: a secret is handed out only once this returns. One item
    /// a call: a list of references would build its array type's metadata
    /// at run time in every `find -w`, where a file records nothing.
    func recordRead(_ ref: [UInt8]) throws
    /// Refuses an item of `pclass` the place can't hold.
    func admit(_ pclass: ProtectionClass) throws
    /// What a search that matched nothing reports.
    func noMatch() -> KeychainError
    /// The refusal of an operation the place lacks (`policy.capabilities`).
    func unavailable(_ what: String) -> KeychainError
    /// Runs `scan` over the item rows (`TypedItemStorage` implements it).
    func scan(_ scan: RowScan, for keychain: Keychain, _ visit: (ScannedItem) throws -> Bool) throws
}

/// A storage whose item statements are one type, `Items`: the row scan is
/// the engine's one loop specialized for it, so a lookup runs no existential
/// per row and builds no generic metadata (callgrind, bench/README.md).
/// The associated type lives here, not in `KeychainStorage`, which the
/// engine holds as an existential: one with an associated type has its
/// metadata and the keychain object's layout built at run time, by every command.
protocol TypedItemStorage: KeychainStorage {
    associatedtype Items: ItemStoring
    var items: Items { get }
}

extension TypedItemStorage {
    var itemStore: any ItemStoring { items }

    func scan(_ scan: RowScan, for keychain: Keychain, _ visit: (ScannedItem) throws -> Bool) throws {
        try keychain.run(scan, over: items, visit)
    }
}

/// An ability of a storage that counts wrong passwords
/// (`StoragePolicy.countsPasswordFailures`): their attempts take turns, so
/// that the count and the wait of each are decided after the last one's
/// verdict, never side by side (SPEC §5; Keychain+PasswordAttempts).
protocol PasswordTurns: KeychainStorage {
    /// Waits until no other password attempt on this keychain is being
    /// checked, by any process or thread, and returns this attempt's turn:
    /// it ends when the object goes, or with the process, so a killed one
    /// holds nothing. `busy` is called before waiting for another's turn.
    func passwordTurn(busy: () -> Void) throws -> AnyObject
}

extension KeychainStorage {
    func readMeta(_ key: MetaKey) throws -> [UInt8]? { try readMeta(key.rawValue) }
    func writeMeta(_ rows: [(MetaKey, [UInt8])]) throws { try writeMeta(rows.map { ($0.0.rawValue, $0.1) }) }
    func removeMeta(_ key: MetaKey) throws { try removeMeta(key.rawValue) }
}
