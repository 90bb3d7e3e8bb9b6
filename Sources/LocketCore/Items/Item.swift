/// One keychain item as returned by a query.
public struct Item: Sendable {
    /// Whether the item's sealed values could be opened.
    public enum Availability: String, Sendable {
        /// Attributes (and data, when asked for) are present.
        case available
        /// The class key is not in the session (errSecInteractionNotAllowed).
        case locked
        /// A ThisDeviceOnly item from another device: it never opens here.
        case unavailableOnThisDevice = "unavailable-on-this-device"
        /// A sealed value failed to open: the row was altered or moved (errSecDecode).
        case damaged
        /// A password-current-set item after the password changed (or a
        /// user-presence item after it was removed): its secret never opens again.
        case invalidated
    }

    public var itemClass: ItemClass
    /// Sealed attribute values; an absent key means the empty value.
    public var attributes: [Attribute: [UInt8]]
    public var accessGroup: String
    public var accessible: ProtectionClass
    /// Opaque and stable for the item's life.
    public var persistentRef: [UInt8]
    /// Milliseconds since 1970.
    public var creationDate: Int64
    public var modificationDate: Int64
    /// The secret, when it was asked for.
    public var data: SecureBytes?
    /// Metadata sealed with the secret (the git credential helper's fields).
    public var extra: SecureBytes? = nil
    public var availability: Availability
    /// The item's access control (SPEC §14), nil for none.
    public var accessControl: AccessControl? = nil
    /// Its stored record (the sealed item secret), for re-sealing.
    var access: ItemAccess? = nil
    /// Free-form attributes, content type and uniqueness (SPEC §18).
    public var freeForm = FreeForm()

    public subscript(_ attribute: Attribute) -> [UInt8] {
        get { attributes[attribute] ?? [] }
        set { attributes[attribute] = newValue.isEmpty ? nil : newValue }
    }

    /// The string attributes whose value was given as bytes (`Attribute.valueTypes`).
    public var givenAsBytes: Set<Attribute> { ValueTypes.decode(self[.valueTypes]) }
}

/// The encoding of `Attribute.valueTypes`: the tags, in order.
enum ValueTypes {
    static func encode(_ attributes: Set<Attribute>) -> [UInt8] { attributes.map(\.rawValue).sorted() }
    static func decode(_ bytes: [UInt8]) -> Set<Attribute> { Set(bytes.compactMap(Attribute.init(rawValue:))) }

    /// `stored` with the marks of `changed` string attributes set as `givenAsBytes` says.
    static func updating(_ stored: [UInt8], changed: some Sequence<Attribute>, givenAsBytes: Set<Attribute>) -> [UInt8] {
        var marks = decode(stored)
        for attribute in changed where attribute.kind == .string {
            if givenAsBytes.contains(attribute) { marks.insert(attribute) } else { marks.remove(attribute) }
        }
        return encode(marks)
    }
}

/// The attributes of an item to add.
public struct NewItem: Sendable {
    public var itemClass: ItemClass
    public var attributes: [Attribute: [UInt8]] = [:]
    /// nil: the caller's default group.
    public var accessGroup: String?
    public var accessible: ProtectionClass?
    /// Access control instead of `accessible` (both: errSecParam).
    public var accessControl: AccessControl?
    /// Free-form attributes, content type and uniqueness (SPEC §18).
    public var freeForm = FreeForm()
    /// The string attributes given as bytes (the Security module's CFData):
    /// given back as bytes (`Item.givenAsBytes`).
    public var givenAsBytes: Set<Attribute> = []

    public init(itemClass: ItemClass) { self.itemClass = itemClass }

    /// What `add` stores: the non-empty sealed values, with the label
    /// defaulted (SPEC §3) unless one was given, even an empty one.
    var storedAttributes: [Attribute: [UInt8]] {
        var stored = attributes.filter { $0.key.isSealed && !$0.value.isEmpty }
        if attributes[.label] == nil, let named = itemClass.labelDefault, let value = stored[named] { stored[.label] = value }
        let marks = givenAsBytes.filter { $0.kind == .string && stored[$0] != nil }
        stored[.valueTypes] = marks.isEmpty ? nil : ValueTypes.encode(marks)
        return stored
    }

    /// Sets a value, refusing attributes the class does not have.
    public mutating func set(_ attribute: Attribute, _ value: [UInt8]) throws {
        guard itemClass.supports(attribute) else { throw Query.foreign(attribute, itemClass) }
        switch attribute {
        case .accessGroup: accessGroup = String(decoding: value, as: UTF8.self)
        case .accessible: accessible = try ProtectionClass(parsing: String(decoding: value, as: UTF8.self))
        default: attributes[attribute] = value
        }
    }
}
