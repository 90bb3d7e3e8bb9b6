import LocketSupport

/// The fields of a Bitwarden export that hold text. Bitwarden writes them
/// all as JSON strings, but a converted or hand-made export may write a
/// number instead (`"password": 123`, a card's `"expYear": 2030`): it is
/// taken as its text exactly as written (`123`, `-1.50e3`), never as an
/// empty secret. `null` or a missing field is empty, as Bitwarden means it.
/// Anything else (true or false, an array, an object) is not text: the item
/// is skipped with a reason naming the field (`NotText`).
struct BitwardenText {
    /// An item whose field holds something that is not text: skipped with `reason`.
    struct NotText: Error {
        let reason: String
    }

    let input: SecureBytes

    /// The field's text as plain bytes (names, accounts, comments).
    func bytes(_ value: JSONValue?, _ field: String) throws -> [UInt8] {
        try secure(value, field).bytes
    }

    /// The field's text in guarded memory (secrets).
    func secure(_ value: JSONValue?, _ field: String) throws -> SecureBytes {
        switch value {
        case nil, .null?: return SecureBytes()
        case .string?: return try value!.secure(in: input)
        case .number(let start, let end)?:
            return try input.withUnsafeBytes { try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: $0[start..<end])) }
        case .bool?: throw NotText(reason: "its \(field) is not text (true or false)")
        case .array?: throw NotText(reason: "its \(field) is not text (an array)")
        case .object?: throw NotText(reason: "its \(field) is not text (an object)")
        }
    }

    /// A custom field shown in the comment: a boolean field's `true` or
    /// `false` is written as such, as Bitwarden's own exports write it.
    func shown(_ value: JSONValue?, _ field: String) throws -> [UInt8] {
        if case .bool(let flag)? = value { return Array((flag ? "true" : "false").utf8) }
        return try bytes(value, field)
    }
}
