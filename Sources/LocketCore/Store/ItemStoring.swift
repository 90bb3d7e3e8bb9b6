/// What the SecItem operations (add, find, update, delete, dump, status)
/// need of the place items live: a keychain file (`ItemStore` over SQLite)
/// or a remote keychain (`RemoteItemStore` over PostgreSQL). The engine
/// seals, digests and compares; a store only runs statements over what the
/// engine hands it, so both backends keep the same semantics by construction.
///
/// The cursor and its rows are associated types, so that the lookup path
/// (`Keychain.rows`) is specialized for each backend: a file's `find` runs
/// no existential and instantiates no generic metadata (callgrind, docs/REMOTE.md).
protocol ItemStoring {
    associatedtype Cursor: ItemCursor
    /// Rows matching `filter`, oldest first; `data` selects the sealed secret too.
    func select(_ filter: ItemFilter, data: Bool) throws -> Cursor
    /// An insert for one item or a batch (errSecDuplicateItem on an existing primary key).
    func makeInserter() throws -> any ItemInserting
    /// An update of one row's group, digests and sealed values.
    func makeUpdater() throws -> any ItemUpdating
    /// Deletes every row `filter` matches; returns how many.
    func delete(_ filter: ItemFilter) throws -> Int
    /// The (protection class code, group) pairs present among the rows `filter` matches.
    func classesAndGroups(_ filter: ItemFilter) throws -> [(String, String)]
    /// How many rows `filter` matches, by protection class code.
    func countByProtectionClass(_ filter: ItemFilter) throws -> [String: Int]
    /// The largest id ever used (0 for an empty keychain).
    func maximumID() throws -> Int64
}

/// A selected row, read through its named accessors.
protocol StoredItemRow {
    var id: Int64 { get }
    var ref: [UInt8] { get }
    var itemClass: ItemClass? { get }
    var protectionClassCode: String { get }
    var accessGroup: String { get }
    /// The sealed attribute record, valid inside `body` only.
    func withAttributes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
    /// The sealed secret (only when selected with `data`).
    func withData<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

/// Rows one at a time; a row is valid until the next call.
protocol ItemCursor {
    associatedtype Row: StoredItemRow
    func next() throws -> Row?
}

/// See `ItemStore.Inserter`.
protocol ItemInserting {
    func insert(ref: [UInt8], itemClass: ItemClass, accessible: ProtectionClass, group: String,
                digests: ItemDigests, attributes: [UInt8], data: [UInt8]) throws
}

/// See `ItemStore.Updater`.
protocol ItemUpdating {
    func update(id: Int64, group: String, digests: ItemDigests, attributes: [UInt8], data: [UInt8]) throws
}

// The file's store, as it is.
extension ItemStore: ItemStoring {
    func makeInserter() throws -> any ItemInserting { try prepareInsert() }
    func makeUpdater() throws -> any ItemUpdating { try prepareUpdate() }
}

extension ItemStore.Row: StoredItemRow {}
extension ItemStore.Cursor: ItemCursor {}
extension ItemStore.Inserter: ItemInserting {}
extension ItemStore.Updater: ItemUpdating {}
