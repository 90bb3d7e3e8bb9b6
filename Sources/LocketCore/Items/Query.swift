/// A class plus attribute equalities (SecItemCopyMatching's query).
public struct Query: Sendable {
    public var itemClass: ItemClass
    /// Sealed attributes to match byte for byte; an empty value matches items whose value is empty.
    public private(set) var attributes: [(Attribute, [UInt8])] = []
    public var accessGroup: String?
    public var persistentRef: [UInt8]?
    /// Free-form attributes to match exactly (SPEC §18): an item matches
    /// when it has each name with that value.
    public private(set) var freeForm: [(name: String, value: String)] = []

    public init(itemClass: ItemClass) { self.itemClass = itemClass }

    /// Whether the query names nothing at all (an unqualified delete must be explicit).
    public var isEmpty: Bool { attributes.isEmpty && accessGroup == nil && persistentRef == nil && freeForm.isEmpty }

    /// Adds a free-form attribute equality.
    public mutating func match(freeForm name: String, _ value: String) {
        freeForm.removeAll { $0.name == name }
        freeForm.append((name, value))
    }

    /// Whether `item`'s free-form attributes hold every pair of the query.
    func matchesFreeForm(_ item: Item) -> Bool { freeForm.allSatisfy { item.freeForm.attributes[$0.name] == $0.value } }

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
