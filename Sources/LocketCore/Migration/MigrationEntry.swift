/// One thing a migration source yields: an item to add, or an entry that
/// can't become one and why.
public enum MigrationEntry: Sendable {
    /// An item to add.
    case item(MigrationItem)
    /// An entry of the source that is not imported.
    case skipped(MigrationSkip)
}

/// An item read from another tool's export, in locket's terms (Migration.md).
public struct MigrationItem: Sendable {
    /// Generic password, or internet password for logins with a URL.
    public var itemClass: ItemClass
    /// Canonical attribute values (AttributeValue's encoding); no access group or accessible.
    public var attributes: [Attribute: [UInt8]]
    /// The secret.
    public var data: SecureBytes
    /// Milliseconds since 1970, when the source gives them.
    public var creationDate: Int64?
    /// Milliseconds since 1970, when the source gives them.
    public var modificationDate: Int64?
    /// Where it came from (`row 4 'GitHub'`, `item 3`, `web/github.com/alice`): for messages, never a secret.
    public var origin: String

    /// An item without dates.
    public init(itemClass: ItemClass, attributes: [Attribute: [UInt8]], data: SecureBytes, origin: String) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.data = data
        self.origin = origin
    }

    /// The values that make the item unique within one access group.
    var primaryKey: [[UInt8]] { itemClass.primaryKey.map { attributes[$0] ?? [] } }
}

/// An entry of the source that was not imported, and why (no secret in either).
public struct MigrationSkip: Sendable, Equatable {
    /// Where it came from (`row 5 'GitHub'`).
    public var origin: String
    /// Why it was not imported, as a clause (`it is in Bitwarden's trash`).
    public var reason: String

    /// A skipped entry.
    public init(origin: String, reason: String) {
        self.origin = origin
        self.reason = reason
    }
}

/// The formats `import --from` reads (SPEC §15).
public enum MigrationFormat: String, CaseIterable, Sendable {
    /// A password-store directory (`PassStore.read`).
    case pass
    /// Bitwarden's unencrypted JSON export.
    case bitwardenJSON = "bitwarden-json"
    /// 1Password's CSV export.
    case onePasswordCSV = "1password-csv"
    /// KeePassXC's CSV export.
    case keepassxcCSV = "keepassxc-csv"
    /// The text of macOS `security dump-keychain -d`.
    case securityDump = "security-dump"
}

/// Reads another tool's export into items, in source order.
public enum Migration {
    /// The largest export file read (the CLI reads it whole into guarded memory).
    public static let maximumInputLength = 256 * 1024 * 1024

    /// Parses `input` (an export file's bytes) as `format` and calls `body`
    /// with each entry. Entries whose primary key repeats an earlier one are
    /// skipped as duplicates. Throws errSecDecode only when the file as a
    /// whole is not of the format (wrong header, not JSON, encrypted export);
    /// a bad entry is a `.skipped` entry, never an error. `pass` is read with
    /// `PassStore.read`, not here.
    public static func read(_ format: MigrationFormat, _ input: SecureBytes, _ body: (MigrationEntry) throws -> Void) throws {
        var deduplicator = Deduplicator()
        let emit: (MigrationEntry) throws -> Void = { try body(deduplicator.check($0)) }
        switch format {
        case .bitwardenJSON: try BitwardenJSON.read(input, emit)
        case .onePasswordCSV: try OnePasswordCSV.read(input, emit)
        case .keepassxcCSV: try KeePassXCCSV.read(input, emit)
        case .securityDump: try SecurityDump.read(input, emit)
        case .pass: throw KeychainError(.param, "a pass store is a directory: read it with PassStore.read")
        }
    }

    /// Counts duplicates of a primary key (class and primary-key attributes)
    /// within one source: the first is kept, later ones are skipped naming it.
    struct Deduplicator {
        private var seen: [String: [[[UInt8]]: String]] = [:]

        mutating func check(_ entry: MigrationEntry) -> MigrationEntry {
            guard case .item(let item) = entry else { return entry }
            let key = item.primaryKey
            if let first = seen[item.itemClass.rawValue]?[key] {
                return .skipped(MigrationSkip(origin: item.origin, reason: "duplicate of \(first) (same \(describe(item)))"))
            }
            seen[item.itemClass.rawValue, default: [:]][key] = item.origin
            return entry
        }

        private func describe(_ item: MigrationItem) -> String {
            item.itemClass == .genericPassword ? "service and account" : "server, account, protocol, port and path"
        }
    }
}
