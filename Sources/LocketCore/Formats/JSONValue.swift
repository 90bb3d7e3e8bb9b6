import LocketSupport

/// The one strict JSON reader (RFC 8259) of locket: entitlements, vault
/// exports, docker's credentials. It reads guarded memory and its strings
/// stay ranges of the input until asked for, so that a secret is decoded
/// straight into `SecureBytes` and never becomes a Swift string. Object keys
/// (field names) are decoded to strings; every member is kept in order, so
/// that each format picks which of two equal keys counts.
public indirect enum JSONValue: Sendable {
    /// A string's bytes in the input, between its quotes, escapes not yet undone.
    case string(start: Int, end: Int)
    /// A number's text in the input.
    case number(start: Int, end: Int)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    /// How a document is read.
    public struct Options: Sendable {
        /// The deepest nesting of arrays and objects, counting the outermost.
        public var maximumDepth: Int
        /// Whether a `\u` escape of half a surrogate pair is read (as U+FFFD)
        /// rather than refused: JavaScript writes them (a vault's notes may
        /// hold one), RFC 8259 leaves them to the reader.
        public var loneSurrogates: Bool

        public init(maximumDepth: Int = 64, loneSurrogates: Bool = false) {
            self.maximumDepth = maximumDepth
            self.loneSurrogates = loneSurrogates
        }
    }

    /// The first member named `key` of an object.
    subscript(_ key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The last member whose name equals `key` ignoring ASCII case, as Go's
    /// encoding/json reads objects (docker's credential helpers).
    public func lastMember(matching key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        let wanted = key.lowercased()
        return members.last { $0.key.lowercased() == wanted }?.value
    }

    /// Whether this is an object.
    public var isObject: Bool {
        if case .object = self { return true }
        return false
    }

    /// Whether this is a string.
    public var isString: Bool {
        if case .string = self { return true }
        return false
    }

    var array: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// Parses a whole document (a UTF-8 byte order mark is skipped); errSecDecode when it is not JSON.
    public static func parse(_ input: SecureBytes, options: Options = Options()) throws -> JSONValue {
        try input.withUnsafeBytes { r in
            var parser = Parser(r: r, i: r.starts(with: [0xef, 0xbb, 0xbf]) ? 3 : 0, options: options)
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
        let options: Options

        func bad(_ why: String) -> KeychainError { KeychainError(.decode, "not a JSON document: \(why) at byte \(i)") }

        mutating func whitespace() {
            while i < r.count, r[i] == 0x20 || r[i] == 0x0a || r[i] == 0x0d || r[i] == 0x09 { i += 1 }
        }

        /// `depth` counts the arrays and objects around the value.
        mutating func value(depth: Int) throws -> JSONValue {
            guard i < r.count else { throw bad("the document ends early") }
            if r[i] == UInt8(ascii: "{") || r[i] == UInt8(ascii: "["), depth >= options.maximumDepth {
                throw bad("nesting deeper than \(options.maximumDepth)")
            }
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
                    members.append((key, try value(depth: depth + 1)))
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

        /// The UTF-16 unit of the `\\uXXXX` escape at `at`.
        func escapedUnit(at position: Int) throws -> UInt32 {
            guard position + 6 <= r.count, let value = (2..<6).reduce(UInt32?(0), { v, k in hexDigit(r[position + k]).flatMap { d in v.map { $0 << 4 | d } } })
            else { throw bad("a malformed \\u escape") }
            return value
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
                        let unit = try escapedUnit(at: i)
                        i += 6
                        if !options.loneSurrogates, (0xd800..<0xe000).contains(unit) {
                            // A high half must be followed at once by a low half, and a low half never comes alone.
                            guard unit < 0xdc00, i + 1 < r.count, r[i] == UInt8(ascii: "\\"), r[i + 1] == UInt8(ascii: "u"),
                                  (0xdc00..<0xe000).contains(try escapedUnit(at: i)) else { throw bad("half a surrogate pair") }
                            i += 6
                        }
                    default: throw bad("an unknown escape")
                    }
                    continue
                }
                i += 1
            }
            throw bad("a string that is not closed")
        }
    }

    /// A string's bytes with escapes undone (lone surrogates, where read, become U+FFFD).
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

    /// The value as bytes when it is a string; empty for other types.
    public func bytes(in input: SecureBytes) -> [UInt8] {
        guard case .string(let start, let end) = self else { return [] }
        return input.withUnsafeBytes { JSONValue.decode($0, start, end) }
    }

    /// A string value decoded straight into guarded memory; empty for other types.
    public func secure(in input: SecureBytes) throws -> SecureBytes {
        guard case .string(let start, let end) = self else { return SecureBytes() }
        return try input.withUnsafeBytes { r in
            var n = 0
            JSONValue.decode(r, start, end) { _ in n += 1 }
            let out = try SecureBytes(count: n)
            out.withUnsafeMutableBytes { o in
                var k = 0
                JSONValue.decode(r, start, end) { o[k] = $0; k += 1 }
            }
            return out
        }
    }
}
