/// A class plus attribute equalities (SecItemCopyMatching's query).
public struct Query: Sendable {
    public var itemClass: ItemClass
    /// Sealed attributes to match byte for byte; an empty value matches items whose value is empty.
    public private(set) var attributes: [(Attribute, [UInt8])] = []
    public var accessGroup: String?
    public var persistentRef: [UInt8]?
    /// Free-form attributes to match exactly (SPEC §18): an item matches
    /// when it has each name with that value. Two arrays of String, not one
    /// of a tuple: that array type's metadata cost every `find` at run time.
    private(set) var freeFormNames: [String] = []
    private(set) var freeFormValues: [String] = []

    /// The free-form equalities, in the order given.
    public var freeForm: [(name: String, value: String)] { Array(zip(freeFormNames, freeFormValues)) }

    public init(itemClass: ItemClass) { self.itemClass = itemClass }

    /// Whether the query names nothing at all (an unqualified delete must be explicit).
    public var isEmpty: Bool { attributes.isEmpty && accessGroup == nil && persistentRef == nil && freeFormNames.isEmpty }

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
        guard attribute != .accessible else {
            throw KeychainError(.param, "accessible can't be used in a query")
        }
        if attribute == .accessGroup {
            accessGroup = String(decoding: value, as: UTF8.self)
            return
        }
        attributes.removeAll { $0.0 == attribute }
        attributes.append((attribute, value))
    }

    static func foreign(_ attribute: Attribute, _ itemClass: ItemClass) -> KeychainError {
        KeychainError(.noSuchAttr, "\(itemClass.name) items have no \(attribute.longName) attribute (\(attribute.code))")
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
