import LocketSupport

/// A strict JSON reader (RFC 8259) over guarded memory whose strings stay
/// ranges of the input until asked for, so that a vault's passwords are
/// decoded straight into `SecureBytes` and never become Swift strings.
/// Object keys (field names) are decoded to strings; of two equal keys the
/// first is kept.
indirect enum JSONValue {
    /// A string's bytes in the input, between its quotes, escapes not yet undone.
    case string(start: Int, end: Int)
    /// A number's text in the input.
    case number(start: Int, end: Int)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    static let maximumDepth = 64

    subscript(_ key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    var array: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// Parses a whole document; errSecDecode when it is not JSON.
    static func parse(_ input: SecureBytes) throws -> JSONValue {
        try input.withUnsafeBytes { r in
            var parser = Parser(r: r, i: r.starts(with: [0xef, 0xbb, 0xbf]) ? 3 : 0)
            parser.whitespace()
            let value = try parser.value(depth: 0)
            parser.whitespace()
            guard parser.i == r.count else { throw parser.bad("text after the document") }
            return value
        }
    }

    private struct Parser {
        let r: UnsafeRawBufferPointer
        var i: Int

        func bad(_ why: String) -> KeychainError { KeychainError(.decode, "not a JSON document: \(why) at byte \(i)") }

        mutating func whitespace() {
            while i < r.count, r[i] == 0x20 || r[i] == 0x0a || r[i] == 0x0d || r[i] == 0x09 { i += 1 }
        }

        mutating func value(depth: Int) throws -> JSONValue {
            guard depth <= JSONValue.maximumDepth else { throw bad("nesting deeper than \(JSONValue.maximumDepth)") }
            guard i < r.count else { throw bad("the document ends early") }
            switch r[i] {
            case UInt8(ascii: "{"):
                i += 1
                var members: [(key: String, value: JSONValue)] = []
                whitespace()
                if i < r.count, r[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                while true {
                    whitespace()
                    guard i < r.count, r[i] == UInt8(ascii: "\"") else { throw bad("an object key is not a string") }
                    let (start, end) = try string()
                    let key = String(decoding: JSONValue.decode(r, start, end), as: UTF8.self)
                    whitespace()
                    guard i < r.count, r[i] == UInt8(ascii: ":") else { throw bad("no colon after an object key") }
                    i += 1
                    whitespace()
                    let member = try value(depth: depth + 1)
                    if !members.contains(where: { $0.key == key }) { members.append((key, member)) }
                    whitespace()
                    guard i < r.count else { throw bad("the document ends inside an object") }
                    if r[i] == UInt8(ascii: ",") { i += 1; continue }
                    guard r[i] == UInt8(ascii: "}") else { throw bad("no comma or closing brace in an object") }
                    i += 1
                    return .object(members)
                }
            case UInt8(ascii: "["):
                i += 1
                var items: [JSONValue] = []
                whitespace()
                if i < r.count, r[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                while true {
                    whitespace()
                    items.append(try value(depth: depth + 1))
                    whitespace()
                    guard i < r.count else { throw bad("the document ends inside an array") }
                    if r[i] == UInt8(ascii: ",") { i += 1; continue }
                    guard r[i] == UInt8(ascii: "]") else { throw bad("no comma or closing bracket in an array") }
                    i += 1
                    return .array(items)
                }
            case UInt8(ascii: "\""):
                let (start, end) = try string()
                return .string(start: start, end: end)
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                let start = i
                try number()
                return .number(start: start, end: i)
            default:
                throw bad("an unexpected character")
            }
        }

        mutating func literal(_ word: StaticString) throws {
            let n = word.utf8CodeUnitCount
            guard i + n <= r.count, (0..<n).allSatisfy({ r[i + $0] == word.utf8Start[$0] }) else { throw bad("a misspelt literal") }
            i += n
        }

        mutating func number() throws {
            let start = i
            if r[i] == UInt8(ascii: "-") { i += 1 }
            func digits() -> Int {
                let from = i
                while i < r.count, decimalDigit(r[i]) != nil { i += 1 }
                return i - from
            }
            let integerStart = i
            guard digits() > 0 else { throw bad("a malformed number") }
            guard r[integerStart] != UInt8(ascii: "0") || i - integerStart == 1 else { throw bad("a number with a leading zero") }
            if i < r.count, r[i] == UInt8(ascii: ".") { i += 1; guard digits() > 0 else { throw bad("a malformed number") } }
            if i < r.count, r[i] == UInt8(ascii: "e") || r[i] == UInt8(ascii: "E") {
                i += 1
                if i < r.count, r[i] == UInt8(ascii: "+") || r[i] == UInt8(ascii: "-") { i += 1 }
                guard digits() > 0 else { throw bad("a malformed number") }
            }
            _ = start
        }

        /// Checks a string's escapes and UTF-8; returns its contents' range.
        mutating func string() throws -> (Int, Int) {
            i += 1
            let start = i
            while i < r.count {
                let c = r[i]
                if c == UInt8(ascii: "\"") {
                    let end = i
                    i += 1
                    // Checked in place: a copy of a password in a Swift string could not be wiped.
                    guard UTF8Check.isValid(UnsafeRawBufferPointer(rebasing: r[start..<end])) else { throw bad("a string that is not UTF-8") }
                    return (start, end)
                }
                guard c >= 0x20 else { throw bad("a control character in a string") }
                if c == UInt8(ascii: "\\") {
                    guard i + 1 < r.count else { break }
                    switch r[i + 1] {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                         UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"): i += 2
                    case UInt8(ascii: "u"):
                        guard i + 6 <= r.count, (2..<6).allSatisfy({ hexDigit(r[i + $0]) != nil }) else { throw bad("a malformed \\u escape") }
                        i += 6
                    default: throw bad("an unknown escape")
                    }
                    continue
                }
                i += 1
            }
            throw bad("a string that is not closed")
        }
    }

    /// A string's bytes with escapes undone (lone surrogates become U+FFFD).
    static func decode(_ r: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(end - start)
        decode(r, start, end) { out.append($0) }
        return out
    }

    private static func decode(_ r: UnsafeRawBufferPointer, _ start: Int, _ end: Int, _ put: (UInt8) -> Void) {
        var i = start
        func hex4(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 << 4 | (hexDigit(r[at + $1]) ?? 0) } }
        while i < end {
            guard r[i] == UInt8(ascii: "\\"), i + 1 < end else { put(r[i]); i += 1; continue }
            let e = r[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "b"): put(0x08)
            case UInt8(ascii: "f"): put(0x0c)
            case UInt8(ascii: "n"): put(0x0a)
            case UInt8(ascii: "r"): put(0x0d)
            case UInt8(ascii: "t"): put(0x09)
            case UInt8(ascii: "u"):
                guard i + 4 <= end else { return }
                var scalar = hex4(i)
                i += 4
                if (0xd800..<0xdc00).contains(scalar), i + 6 <= end, r[i] == UInt8(ascii: "\\"), r[i + 1] == UInt8(ascii: "u") {
                    let low = hex4(i + 2)
                    if (0xdc00..<0xe000).contains(low) {
                        scalar = 0x10000 + ((scalar - 0xd800) << 10) + (low - 0xdc00)
                        i += 6
                    }
                }
                let s = Unicode.Scalar(scalar) ?? "\u{fffd}"
                for b in String(s).utf8 { put(b) }
            default: put(e)
            }
        }
    }

    /// An integer number's value (also from a string of digits, as some exports write them).
    func int(in input: SecureBytes) -> Int? {
        switch self {
        case .number(let start, let end), .string(let start, let end):
            return input.withUnsafeBytes { Int(String(decoding: UnsafeRawBufferPointer(rebasing: $0[start..<end]), as: UTF8.self)) }
        default: return nil
        }
    }

    /// The value as bytes when it is a string; nil for null or absent, empty for other types.
    func bytes(in input: SecureBytes) -> [UInt8] {
        guard case .string(let start, let end) = self else { return [] }
        return input.withUnsafeBytes { JSONValue.decode($0, start, end) }
    }

    /// A string value decoded straight into guarded memory.
    func secure(in input: SecureBytes) -> SecureBytes {
        guard case .string(let start, let end) = self else { return SecureBytes(count: 0) }
        return input.withUnsafeBytes { r in
            var n = 0
            JSONValue.decode(r, start, end) { _ in n += 1 }
            let out = SecureBytes(count: n)
            out.withUnsafeMutableBytes { o in
                var k = 0
                JSONValue.decode(r, start, end) { o[k] = $0; k += 1 }
            }
            return out
        }
    }
}

/// UTF-8 validation in place (RFC 3629: no overlong forms, surrogates or values past U+10FFFF).
enum UTF8Check {
    static func isValid(_ r: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        while i < r.count {
            let b = r[i]
            if b < 0x80 { i += 1; continue }
            let n: Int
            var lower: UInt8 = 0x80, upper: UInt8 = 0xbf
            switch b {
            case 0xc2...0xdf: n = 1
            case 0xe0: n = 2; lower = 0xa0
            case 0xe1...0xec, 0xee, 0xef: n = 2
            case 0xed: n = 2; upper = 0x9f
            case 0xf0: n = 3; lower = 0x90
            case 0xf1...0xf3: n = 3
            case 0xf4: n = 3; upper = 0x8f
            default: return false
            }
            guard i + n < r.count else { return false }
            guard r[i + 1] >= lower, r[i + 1] <= upper else { return false }
            for k in 2..<(n + 1) { guard r[i + k] & 0xc0 == 0x80 else { return false } }
            i += n + 1
        }
        return true
    }
}
