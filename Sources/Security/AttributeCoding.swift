import LocketCore
import LocketSupport

/// Apple's values of item attributes and locket's canonical bytes (SPEC §3,
/// §12), both ways. The dictionary keys are the attributes' four-character
/// codes, which Apple's constants hold too (`kSecAttrAccount` is "acct").
enum AttributeCoding {
    /// The attribute a dictionary key names, nil when it names none.
    static func attribute(_ key: String) -> Attribute? { byCode[key] }

    private static let byCode: [String: Attribute] = Dictionary(uniqueKeysWithValues: Attribute.allCases.compactMap { attribute in
        // Access group, accessible and synchronizable are read apart (ItemRequest); the value types are locket's own.
        [.accessGroup, .accessible, .synchronizable, .valueTypes].contains(attribute) ? nil : (attribute.code, attribute)
    })

    /// Apple's kSecAttrKeyType values and locket's key types.
    static let keyTypes: [(apple: String, type: KeyType)] = [("42", .rsa), ("73", .ec), ("105", .ed25519), ("106", .x25519)]

    /// The key type a kSecAttrKeyType value names.
    static func keyType(_ value: Any, key: String = "kSecAttrKeyType") throws -> KeyType {
        let text = Value.string(value) ?? Value.integer(value).map(String.init)
        guard let text else { throw Value.wrongType(key, "a kSecAttrKeyType value") }
        if let match = keyTypes.first(where: { $0.apple == text }) { return match.type }
        if let type = KeyType(rawValue: text) { return type }
        throw KeychainError(.param, "key type \(Printable.clip(text)) is not supported (RSA, EC, Ed25519, X25519)")
    }

    /// The canonical bytes of `value` given under `key` for `attribute` of an item of `itemClass`.
    static func encode(_ value: Any, _ attribute: Attribute, _ itemClass: ItemClass, key: String) throws -> [UInt8] {
        if itemClass == .key && attribute == .type { return Array(try keyType(value, key: key).rawValue.utf8) }
        if itemClass == .key && attribute == .keyClass {
            switch Value.string(value) ?? Value.integer(value).map(String.init) {
            case "0", "public"?: return Array("public".utf8)
            case "1", "private"?: return Array("private".utf8)
            case "2"?: throw KeychainError(.param, "symmetric keys are not supported")
            default: throw Value.wrongType(key, "kSecAttrKeyClassPublic or kSecAttrKeyClassPrivate")
            }
        }
        switch attribute.kind {
        case .string:
            if let text = Value.string(value) { return try AttributeValue.parse(attribute, Array(text.utf8)) }
            // An application tag, or an account given as Data: bytes as they are.
            if let bytes = Value.data(value) { return try checked(attribute, bytes) }
            throw Value.wrongType(key, "a String")
        case .bytes, .hex:
            guard let bytes = Value.bytes(value) else { throw Value.wrongType(key, "Data") }
            return try checked(attribute, bytes)
        case .fourCharCode:
            if attribute == .creator || attribute == .type, let code = Value.integer(value) {
                guard let word = UInt32(exactly: code) else { throw Value.wrongType(key, "a FourCharCode") }
                return word == 0 ? [] : BigEndian.bytes(word)
            }
            guard let text = Value.string(value) else { throw Value.wrongType(key, "a four-character code") }
            return try AttributeValue.parse(attribute, Array(text.utf8))
        case .port:
            guard let port = Value.integer(value) else { throw Value.wrongType(key, "a port number") }
            return try AttributeValue.parse(attribute, Array(String(port).utf8))
        case .number:
            if let date = Value.date(value) { return Array(String(Int64(date.timeIntervalSince1970)).utf8) }
            guard let number = Value.integer(value) else { throw Value.wrongType(key, "a number") }
            return try AttributeValue.parse(attribute, Array(String(number).utf8))
        case .boolean:
            guard let flag = Value.bool(value) else { throw Value.wrongType(key, "a Bool") }
            return flag ? [0x31] : [0x30]
        case .protectionClass:
            throw KeychainError(.param, "\(key) is not an attribute value")
        }
    }

    private static func checked(_ attribute: Attribute, _ bytes: [UInt8]) throws -> [UInt8] {
        guard bytes.count <= Attribute.maximumValueLength else {
            throw KeychainError(.dataTooLarge, "the \(attribute.longName) is longer than \(ByteSize.text(Attribute.maximumValueLength))")
        }
        return bytes
    }

    /// Apple's value of stored bytes: String, Data, NSNumber (four-char
    /// codes, ports, sizes), Bool, or Date (a key's start and end dates).
    static func decode(_ bytes: [UInt8], _ attribute: Attribute, _ itemClass: ItemClass, givenAsBytes: Bool = false) -> Any {
        if givenAsBytes { return Data(bytes) }
        let text = String(validating: bytes, as: UTF8.self)
        if itemClass == .key && attribute == .type {
            return keyTypes.first { $0.type.rawValue == text }.map { $0.apple } ?? text ?? ""
        }
        if itemClass == .key && attribute == .keyClass { return text == "private" ? "1" : "0" }
        switch attribute.kind {
        case .string:
            if attribute == .applicationTag { return Data(bytes) }
            return text.map { $0 as Any } ?? Data(bytes)
        case .bytes, .hex:
            return Data(bytes)
        case .fourCharCode:
            if attribute == .creator || attribute == .type {
                return bytes.count == 4 ? NSNumber(value: UInt32(BigEndian.value(bytes))) : NSNumber(value: 0 as UInt32)
            }
            return text ?? ""
        case .port:
            return AttributeValue.port(bytes)
        case .number:
            let number = text.flatMap { Int($0) } ?? 0
            if attribute == .startDate || attribute == .endDate { return Date(timeIntervalSince1970: TimeInterval(number)) }
            return number
        case .boolean:
            return bytes == [0x31]
        case .protectionClass:
            return text ?? ""
        }
    }
}
