/// What the SecItem operations (add, find, update, delete, dump, status)
/// need of the rows items live in (a storage's `items`). The engine seals,
/// digests and compares; a store only runs statements over what the engine
/// hands it, so every storage keeps the same semantics by construction.
///
/// The cursor and its rows are associated types, so that the row scan
/// (`RowScan`) is specialized for each storage: a lookup runs no
/// existential per row and instantiates no generic metadata (callgrind).
package protocol ItemStoring {
    associatedtype Cursor: ItemCursor
    associatedtype Reader: ItemRowReading where Reader.Row == Cursor.Row
    /// Rows matching `filter`, oldest first; `data` selects the sealed secret too.
    func select(_ filter: ItemFilter, data: Bool) throws -> Cursor
    /// Up to `limit` ids after `id`, in order: a pass over every row (a
    /// rotation), a batch of ids at a time, whatever the secrets' sizes.
    func ids(after id: Int64, limit: Int) throws -> [Int64]
    /// Reads rows by id, one at a time, with their sealed secrets.
    func makeRowReader() throws -> Reader
    /// An insert for one item or a batch (errSecDuplicateItem on an existing primary key).
    func makeInserter() throws -> any ItemInserting
    /// An update of one row's group, protection class, digests and sealed values.
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
package protocol StoredItemRow {
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
package protocol ItemCursor {
    associatedtype Row: StoredItemRow
    func next() throws -> Row?
}

/// Rows by id; a row is valid until `finish` or the next call.
package protocol ItemRowReading {
    associatedtype Row: StoredItemRow
    func row(_ id: Int64) throws -> Row?
    /// Lets go of the row before it is written.
    func finish()
}

/// An insert prepared once, for one item or a batch: errSecDuplicateItem
/// when the primary key exists in its class and group, with the transaction
/// still usable (`add -U` goes on to update).
package protocol ItemInserting {
    func insert(ref: [UInt8], itemClass: ItemClass, accessible: ProtectionClass, group: String,
                digests: ItemDigests, attributes: [UInt8], data: [UInt8]) throws
}

/// An update of one row's group, protection class, digests and sealed values, prepared once.
package protocol ItemUpdating {
    func update(id: Int64, group: String, accessible: ProtectionClass, digests: ItemDigests, attributes: [UInt8], data: [UInt8]) throws
}
