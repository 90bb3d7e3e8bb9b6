import LocketSupport

/// The rows a search read, as the keychain holds them (`Keychain.searchHolding`).
public struct HeldSearch: Sendable {
    let query: Query
    let limit: MatchLimit
    let returnData: Bool
    let rows: [Row]

    /// One selected row, copied out of the storage: sealed values only.
    struct Row: StoredItemRow, Sendable {
        let id: Int64
        let ref: [UInt8]
        let itemClass: ItemClass?
        let protectionClassCode: String
        let accessGroup: String
        let attributes: [UInt8]
        let data: [UInt8]

        func withAttributes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try attributes.withUnsafeBytes(body) }
        func withData<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try data.withUnsafeBytes(body) }
    }

    /// About how many bytes it holds (for bounding a cache of them).
    public var byteCount: Int { rows.reduce(64) { $0 + 64 + $1.ref.count + $1.accessGroup.utf8.count + $1.attributes.count + $1.data.count } }
}

/// Where a row scan copies every row it selects, before opening it
/// (`RowScan.holding`): what `searchAgain` scans again.
final class HeldRows {
    let keepingData: Bool
    private(set) var rows: [HeldSearch.Row] = []

    init(keepingData: Bool) { self.keepingData = keepingData }

    func hold(_ row: some StoredItemRow) {
        rows.append(HeldSearch.Row(id: row.id, ref: row.ref, itemClass: row.itemClass, protectionClassCode: row.protectionClassCode,
                                   accessGroup: row.accessGroup, attributes: row.withAttributes { Array($0) },
                                   data: keepingData ? row.withData { Array($0) } : []))
    }

    /// Held rows as a row scan reads them.
    final class Cursor: ItemCursor {
        private let rows: [HeldSearch.Row]
        private var position = 0

        init(_ rows: [HeldSearch.Row]) { self.rows = rows }

        func next() throws -> HeldSearch.Row? {
            guard position < rows.count else { return nil }
            defer { position += 1 }
            return rows[position]
        }
    }
}

/// Where a keychain's session records were found, kept by the caller of
/// `Keychain.sessionFingerprint` between calls.
public final class SessionProbe: @unchecked Sendable {
    var serials: [String: Int32] = [:]

    public init() {}
}
