import LocketSupport

/// Entitlements in JSON, read by the one strict JSON reader (`JSONValue`):
/// UTF-8 with an optional byte order mark, one value, nothing after it but
/// whitespace; no trailing commas, comments, leading zeros, lone surrogates
/// or unescaped control characters anywhere in the document; nesting as deep
/// as Foundation's JSONDecoder, which locket used before, took.
enum JSONDocument {
    /// Parses a whole JSON document. Of two equal keys in an object the
    /// first is kept, as Foundation's JSONDecoder did.
    static func parse(_ bytes: [UInt8]) throws -> DocumentValue {
        let input = try SecureBytes(copying: bytes)
        let value: JSONValue
        do {
            value = try JSONValue.parse(input, options: JSONValue.Options(maximumDepth: DocumentValue.maximumDepth))
        } catch is KeychainError {
            throw MalformedDocument()
        }
        return document(value, input)
    }

    private static func document(_ value: JSONValue, _ input: SecureBytes) -> DocumentValue {
        switch value {
        case .string:
            return .string(String(decoding: value.bytes(in: input), as: UTF8.self))
        case .number, .bool:
            return .other
        case .null:
            return .null
        case .array(let items):
            return .array(items.map { document($0, input) })
        case .object(let members):
            var dictionary: [String: DocumentValue] = [:]
            for member in members where dictionary[member.key] == nil { dictionary[member.key] = document(member.value, input) }
            return .dictionary(dictionary)
        }
    }
}
