/// A class plus attribute equalities (SecItemCopyMatching's query).
public struct Query: Sendable {
    public var itemClass: ItemClass
    /// Sealed attributes to match byte for byte; an empty value matches items whose value is empty.
    public private(set) var attributes: [(Attribute, [UInt8])] = []
    public var accessGroup: String?
    /// The protection class (kSecAttrAccessible), an ordinary attribute of a
    /// query as on Apple's platforms (SPEC §4); nil: any.
    public var accessible: ProtectionClass?
    /// kSecAttrSynchronizable as given; nil: not given, which Apple reads as
    /// false (only items that are not synchronizable), except that a
    /// persistent reference names its one item whatever it is (`matching`).
    public var synchronizable: Synchronizable?
    public var persistentRef: [UInt8]?
    /// Free-form attributes to match exactly (SPEC §18): an item matches
    /// when it has each name with that value. Two arrays of String, not one
    /// of a tuple: that array type's metadata cost every `find` at run time.
    private(set) var freeFormNames: [String] = []
    private(set) var freeFormValues: [String] = []

    /// The free-form equalities, in the order given.
    public var freeForm: [(name: String, value: String)] { Array(zip(freeFormNames, freeFormValues)) }

    public init(itemClass: ItemClass) { self.itemClass = itemClass }

    /// Whether the query names nothing at all (an unqualified delete must be
    /// explicit). Synchronizable `.no` and `.any` narrow nothing a user named.
    public var isEmpty: Bool {
        attributes.isEmpty && accessGroup == nil && accessible == nil && synchronizable != .yes && persistentRef == nil && freeFormNames.isEmpty
    }

    /// Which items the query finds by synchronizable.
    var matching: Synchronizable { synchronizable ?? (persistentRef != nil ? .any : .no) }

    /// Whether the query has free-form equalities.
    var hasFreeForm: Bool { !freeFormNames.isEmpty }

    /// Adds a free-form attribute equality.
    public mutating func match(freeForm name: String, _ value: String) {
        if let k = freeFormNames.firstIndex(of: name) {
            freeFormNames.remove(at: k)
            freeFormValues.remove(at: k)
        }
        freeFormNames.append(name)
        freeFormValues.append(value)
    }

    /// Adds an equality, refusing attributes the class does not have.
    public mutating func match(_ attribute: Attribute, _ value: [UInt8]) throws {
        guard itemClass.supports(attribute) else { throw Query.foreign(attribute, itemClass) }
        switch attribute {
        case .accessGroup: accessGroup = String(decoding: value, as: UTF8.self)
        case .accessible: accessible = try ProtectionClass(parsing: String(decoding: value, as: UTF8.self))
        case .synchronizable: synchronizable = value == [0x31] ? .yes : .no
        default:
            // Not removeAll(where:): on an array of tuples it instantiates
            // generic metadata at run time, in every query that names an
            // attribute (17 k instructions of a `find`), to remove nothing.
            var k = attributes.startIndex
            while k < attributes.endIndex {
                if attributes[k].0 == attribute { attributes.remove(at: k) } else { k += 1 }
            }
            attributes.append((attribute, value))
        }
    }

    /// Matches the whole primary key of an item with `stored` attributes:
    /// every primary-key attribute, and whether it is synchronizable.
    mutating func matchPrimaryKey(of stored: [Attribute: [UInt8]]) throws {
        for attribute in itemClass.primaryKey { try match(attribute, stored[attribute] ?? []) }
        synchronizable = Synchronizable(stored)
    }

    static func foreign(_ attribute: Attribute, _ itemClass: ItemClass) -> KeychainError {
        KeychainError(.noSuchAttr, "\(itemClass.name) items have no \(attribute.longName) attribute (\(attribute.code))")
    }
}

/// Which items a query finds by kSecAttrSynchronizable (SPEC §4, Apple's rule).
public enum Synchronizable: Sendable, Equatable {
    /// Only items that are not synchronizable: the key absent, or false.
    case no
    /// Only synchronizable items: true.
    case yes
    /// Both: kSecAttrSynchronizableAny.
    case any

    /// Whether an item with `stored` attributes is synchronizable.
    init(_ stored: [Attribute: [UInt8]]) { self = stored[.synchronizable] == [0x31] ? .yes : .no }

    /// The stored value an item must have, nil for `.any`.
    var storedValue: [UInt8]? {
        switch self {
        case .no: []
        case .yes: [0x31]
        case .any: nil
        }
    }
}

/// How many matches a search returns.
public enum MatchLimit: Sendable, Equatable {
    case one
    case count(Int)
    case all

    var sqlLimit: Int64 {
        switch self {
        case .one: 1
        case .count(let n): Int64(n)
        case .all: -1
        }
    }
}
