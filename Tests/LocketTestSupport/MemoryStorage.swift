import Foundation
@testable import LocketCore
import LocketSupport

/// A keychain held in this process's memory: the engine's third storage
/// (issue 38), for tests only, never in the binary. Format 2's rows as plain
/// values, selected by `ItemFilter.matches` (the third rendering of a filter,
/// beside SQLite's and PostgreSQL's SQL), in transactions that undo
/// everything a failed body did. What the file decides it decides too
/// (`FileStorage.policy`), and it keeps the same record of the highest
/// generation this device has seen (`GenerationMirror`, under its address),
/// so that the storage conformance suites hold it to what they hold a file
/// to. It has none of the file's other abilities: nothing to hold between
/// calls, no older layout, no turns.
final class MemoryStorage: TypedItemStorage {
    /// One item row, as format 2's `items` and `blind` tables hold it.
    struct Row {
        var id: Int64
        var ref: [UInt8]
        var itemClass: String
        var protectionClass: String
        var group: String
        var primaryKey: [UInt8]
        var digests: Set<Int64>
        var attributes: [UInt8]
        var data: [UInt8]
    }

    /// What a transaction reads and writes, copied at its start and put back if it fails.
    struct State {
        var meta: [String: [UInt8]] = [:]
        var keybag: [String: KeybagRow] = [:]
        var rows: [Row] = []
        var lastID: Int64 = 0
    }

    let address: String
    private let lock = NSRecursiveLock()
    private var depth = 0
    var state = State()

    init(address: String) { self.address = address }

    var medium: String { "memory" }
    var policy: StoragePolicy {
        var policy = FileStorage.policy
        // Rows held between calls are answered again while the file is seen
        // unchanged; nothing watches memory for a change.
        policy.rowsMayBeHeld = false
        return policy
    }
    var headerLayout: Header.Layout { .tables }

    // MARK: - Transactions

    /// One transaction at a time, across threads (as SQLite's writer lock
    /// and the file's exclusive lock); a nested call joins the open one.
    func transaction(write: Bool, _ body: () throws -> Void) throws {
        lock.lock()
        defer { lock.unlock() }
        if depth > 0 { return try body() }
        let before = state
        depth += 1
        defer { depth -= 1 }
        do {
            try body()
        } catch {
            state = before
            throw error
        }
    }

    // MARK: - The header

    func readHeader() throws -> Header { Header(meta: state.meta, keybag: state.keybag) }
    func readMeta(_ name: String) throws -> [UInt8]? { state.meta[name] }
    func writeMeta(_ rows: [(String, [UInt8])]) throws { for (name, value) in rows { state.meta[name] = value } }
    func removeMeta(_ name: String) throws { state.meta[name] = nil }
    func writeKeybag(_ keybag: Keybag, replacingAll: Bool) throws {
        if replacingAll { state.keybag = [:] }
        for (name, row) in keybag.rows { state.keybag[name] = row }
    }
    func removeKeybagRow(_ name: String) throws { state.keybag[name] = nil }

    // MARK: - Items

    var items: MemoryItemStore { MemoryItemStore(storage: self) }

    var rollbackRecords: (any RollbackRecords)? { self }
}

extension MemoryStorage: RollbackRecords {
    /// As a file's: per address, authenticated with the device key, none without it.
    func generationMirror(keychainID: [UInt8], environment: Environment, device: SecureBytes?,
                          indexKey: SecureBytes) throws -> GenerationMirror? {
        guard let device else { return nil }
        return try GenerationMirror(environment: environment, keychainID: keychainID, keychainPath: address, device: device)
    }
}

/// The item statements over a `MemoryStorage`'s rows, in its open transaction.
struct MemoryItemStore: ItemStoring {
    let storage: MemoryStorage

    private func matching(_ filter: ItemFilter) -> [MemoryStorage.Row] {
        storage.state.rows.filter { row in
            filter.matches(itemClass: row.itemClass, group: row.group, ref: row.ref, protectionClass: row.protectionClass,
                           primaryKey: row.primaryKey, digests: row.digests)
        }
    }

    func select(_ filter: ItemFilter, data: Bool) throws -> Cursor {
        Cursor(rows: matching(filter).map { Row(row: $0, withData: data) })
    }

    func ids(after id: Int64, limit: Int) throws -> [Int64] {
        Array(storage.state.rows.lazy.map(\.id).filter { $0 > id }.prefix(limit))
    }

    func makeRowReader() throws -> RowReader { RowReader(storage: storage) }
    func makeInserter() throws -> any ItemInserting { Inserter(storage: storage) }
    func makeUpdater() throws -> any ItemUpdating { Updater(storage: storage) }

    func delete(_ filter: ItemFilter) throws -> Int {
        let ids = Set(matching(filter).map(\.id))
        storage.state.rows.removeAll { ids.contains($0.id) }
        return ids.count
    }

    func classesAndGroups(_ filter: ItemFilter) throws -> [(String, String)] {
        var seen: Set<[String]> = []
        return matching(filter).compactMap { seen.insert([$0.protectionClass, $0.group]).inserted ? ($0.protectionClass, $0.group) : nil }
    }

    func countByProtectionClass(_ filter: ItemFilter) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in matching(filter) { counts[row.protectionClass, default: 0] += 1 }
        return counts
    }

    /// As SQLite's AUTOINCREMENT: the largest id ever used, deleted or not.
    func maximumID() throws -> Int64 { storage.state.lastID }

    /// A selected row: its values copied out, so that a write after the select changes nothing read.
    struct Row: StoredItemRow {
        let row: MemoryStorage.Row
        let withData: Bool
        var id: Int64 { row.id }
        var ref: [UInt8] { row.ref }
        var itemClass: ItemClass? { ItemClass(rawValue: row.itemClass) }
        var protectionClassCode: String { row.protectionClass }
        var accessGroup: String { row.group }
        func withAttributes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try row.attributes.withUnsafeBytes(body) }
        func withData<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try (withData ? row.data : []).withUnsafeBytes(body)
        }
    }

    /// The selected rows, oldest first (rows are kept in the order of their ids).
    final class Cursor: ItemCursor {
        private var rows: IndexingIterator<[Row]>
        init(rows: [Row]) { self.rows = rows.makeIterator() }
        func next() throws -> Row? { rows.next() }
    }

    struct RowReader: ItemRowReading {
        let storage: MemoryStorage
        func row(_ id: Int64) throws -> Row? { storage.state.rows.first { $0.id == id }.map { Row(row: $0, withData: true) } }
        func finish() {}
    }

    /// An existing primary key in the class and group (or reference) inserts
    /// nothing and is errSecDuplicateItem, the transaction still usable.
    struct Inserter: ItemInserting {
        let storage: MemoryStorage
        func insert(ref: [UInt8], itemClass: ItemClass, accessible: ProtectionClass, group: String,
                    digests: ItemDigests, attributes: [UInt8], data: [UInt8]) throws {
            let taken = storage.state.rows.contains {
                $0.ref == ref || ($0.primaryKey == digests.primaryKey && $0.itemClass == itemClass.rawValue && $0.group == group)
            }
            guard !taken else { throw KeychainError(.duplicateItem) }
            storage.state.lastID += 1
            storage.state.rows.append(MemoryStorage.Row(
                id: storage.state.lastID, ref: ref, itemClass: itemClass.rawValue, protectionClass: accessible.rawValue, group: group,
                primaryKey: digests.primaryKey, digests: Set(digests.index.map(\.digest) + digests.free), attributes: attributes, data: data))
        }
    }

    /// The row's group, class, digests and sealed values replaced; a new
    /// primary key already in its class and group is errSecDuplicateItem.
    struct Updater: ItemUpdating {
        let storage: MemoryStorage
        func update(id: Int64, group: String, accessible: ProtectionClass, digests: ItemDigests, attributes: [UInt8], data: [UInt8]) throws {
            guard let index = storage.state.rows.firstIndex(where: { $0.id == id }) else {
                throw KeychainError(.decode, "an item read in this transaction is gone")
            }
            let itemClass = storage.state.rows[index].itemClass
            guard !storage.state.rows.contains(where: {
                $0.id != id && $0.primaryKey == digests.primaryKey && $0.itemClass == itemClass && $0.group == group
            }) else { throw KeychainError(.duplicateItem) }
            storage.state.rows[index].group = group
            storage.state.rows[index].protectionClass = accessible.rawValue
            storage.state.rows[index].primaryKey = digests.primaryKey
            storage.state.rows[index].digests = Set(digests.index.map(\.digest) + digests.free)
            storage.state.rows[index].attributes = attributes
            storage.state.rows[index].data = data
        }
    }
}

/// Keychains in memory by address (`memory:NAME`), for this process's
/// tests: made by `create`, opened by `open` as many times as a file is, each
/// open a new keychain object over the same rows, as another process's would be.
public enum MemoryKeychains {
    nonisolated(unsafe) private static var storages: [String: MemoryStorage] = [:]
    private static let lock = NSLock()

    /// A new keychain at `address` with `password` (nil: none), as `Keychain.create(at:)` makes a file.
    public static func create(_ address: String, password: SecureBytes?, kdf cost: KDFCost = .weakForTests,
                              environment: Environment, sessionTimeout: UInt32? = nil) throws {
        try KeychainEngine.create(in: Place(address: address), password: password, kdf: cost, environment: environment,
                                  sessionTimeout: sessionTimeout)
    }

    /// The keychain at `address`, opened for `caller`, its session's keys loaded.
    public static func open(_ address: String, caller: Caller = .owner, environment: Environment, extendSession: Bool = true,
                            acceptRollback: Bool = false) throws -> Keychain {
        guard let storage = lock.withLock({ storages[address] }) else {
            throw KeychainError(.noSuchKeychain, "no keychain at \(address)", reason: .noKeychain(path: address))
        }
        var stored: StoredHeader?
        try storage.transaction(write: false) {
            let header = try storage.readHeader()
            guard let id = header.meta[MetaKey.id.rawValue] else { throw KeychainError(.decode, "\(address) has a damaged header") }
            let kdf = header.meta[MetaKey.kdf.rawValue].flatMap(KDFParameters.init(encoded:))
            stored = StoredHeader(keybag: Keybag(keychainID: id, kdf: kdf, rows: header.keybag), meta: header.meta)
        }
        return try Keychain(opening: storage, stored!, caller: caller, environment: environment, extendSession: extendSession,
                            acceptRollback: acceptRollback)
    }

    /// Forgets the keychain at `address` (its rows go with it).
    public static func remove(_ address: String) { _ = lock.withLock { storages.removeValue(forKey: address) } }

    /// The rows of the keychain at `address` as they are now, to put back
    /// later (an older copy, as a file's bytes are put back).
    static func snapshot(_ address: String) -> MemoryStorage.State? { lock.withLock { storages[address]?.state } }

    /// Puts `state` back as the keychain's rows.
    static func putBack(_ state: MemoryStorage.State, at address: String) { lock.withLock { storages[address]?.state = state } }

    /// Where a new keychain in memory goes.
    struct Place: KeychainPlace {
        let address: String
        var medium: String { "memory" }
        var policy: StoragePolicy { FileStorage.policy }
        var headerLayout: Header.Layout { .tables }

        func checkVacant() throws {
            if lock.withLock({ storages[address] }) != nil {
                throw KeychainError(.duplicateKeychain, "a keychain already exists at \(address)")
            }
        }

        func prepare(environment: Environment) throws {}

        func make(header: [(String, [UInt8])], keybag: Keybag, environment: Environment) throws -> any KeychainStorage {
            let storage = MemoryStorage(address: address)
            try storage.transaction(write: true) {
                try storage.writeMeta(header)
                try storage.writeKeybag(keybag, replacingAll: true)
            }
            try lock.withLock {
                guard storages[address] == nil else { throw KeychainError(.duplicateKeychain, "a keychain already exists at \(address)") }
                storages[address] = storage
            }
            return storage
        }
    }
}
