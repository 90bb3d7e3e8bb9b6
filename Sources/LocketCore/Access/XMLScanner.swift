import Glibc
import LocketSupport

/// The lexical layer of the XML property-list parser: a position in UTF-8
/// bytes, names, attribute values, character data with its references, and
/// the comments and processing instructions XML allows between elements.
/// Every failure is a MalformedDocument: entitlements files are small and a
/// position would not help the user more than "not a property list".
struct XMLScanner {
    let bytes: [UInt8]
    var index: Int

    /// `name="value"` or `name='value'`; plist's `version` is the only one
    /// Apple writes, and none changes how the document reads.
    mutating func attribute() throws -> (name: String, value: String) {
        let name = try name()
        skipWhitespace()
        try expect(UInt8(ascii: "="))
        skipWhitespace()
        guard let quote = next, quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else { throw MalformedDocument() }
        index += 1
        let value = try characterData(quote: quote)
        index += 1
        return (name, value)
    }

    mutating func name() throws -> String {
        let start = index
        while let byte = next, Self.isNameByte(byte) { index += 1 }
        guard index > start else { throw MalformedDocument() }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"), 0x80...:
            true
        default:
            false
        }
    }

    // MARK: - Text

    /// Character data with its references decoded: element content up to the
    /// next `<` that does not open a CDATA section (when `cdata` allows
    /// them), or an attribute value up to `quote`, where `<` and `>` are refused.
    mutating func characterData(quote: UInt8? = nil, cdata: Bool = false) throws -> String {
        var utf8: [UInt8] = []
        var start = index
        while let byte = next, byte != quote {
            if byte == UInt8(ascii: "&") {
                utf8 += bytes[start..<index]
                index += 1
                try reference(into: &utf8)
                start = index
            } else if byte == UInt8(ascii: "<") || (quote != nil && byte == UInt8(ascii: ">")) {
                // In an attribute value, Foundation took `>` for the end of the tag.
                guard quote == nil, cdata, starts(with: "<![CDATA[") else { break }
                utf8 += bytes[start..<index]
                index += 9
                let end = try position(of: "]]>")
                utf8 += bytes[index..<end]
                index = end + 3
                start = index
            } else {
                index += 1
            }
        }
        // Character data always ends before a tag or a closing quote, never at the end of the file.
        guard let end = next, quote == nil || end == quote else { throw MalformedDocument() }
        utf8 += bytes[start..<index]
        return String(decoding: utf8, as: UTF8.self)
    }

    private static let entities: [(name: StaticString, byte: UInt8)] = [
        ("lt;", UInt8(ascii: "<")), ("gt;", UInt8(ascii: ">")), ("amp;", UInt8(ascii: "&")),
        ("apos;", UInt8(ascii: "'")), ("quot;", UInt8(ascii: "\"")),
    ]

    /// After `&`: a predefined entity, or a character reference `&#65;` or
    /// `&#x41;` of at most 8 digits (Foundation's limit) naming a Unicode
    /// scalar. Control characters pass; the entitlements checks refuse them
    /// in names, with a clearer message.
    private mutating func reference(into utf8: inout [UInt8]) throws {
        for entity in Self.entities where starts(with: entity.name) {
            index += entity.name.utf8CodeUnitCount
            utf8.append(entity.byte)
            return
        }
        try expect(UInt8(ascii: "#"))
        let hex = next == UInt8(ascii: "x")
        if hex { index += 1 }
        var value: UInt32 = 0
        var digits = 0
        while let byte = next, byte != UInt8(ascii: ";") {
            let digit = hex ? hexDigit(byte) : decimalDigit(byte)
            guard let digit, digits < 8 else { throw MalformedDocument() }
            value = value * (hex ? 16 : 10) + digit
            digits += 1
            index += 1
        }
        guard digits > 0 else { throw MalformedDocument() }
        try expect(UInt8(ascii: ";"))
        // Unicode.Scalar refuses surrogates and values past U+10FFFF.
        guard let scalar = Unicode.Scalar(value) else { throw MalformedDocument() }
        UTF8.encode(scalar) { utf8.append($0) }
    }

    /// Whitespace, comments and processing instructions, which may come
    /// before, between and after elements.
    mutating func skipMisc() throws {
        while true {
            skipWhitespace()
            if starts(with: "<!--") {
                index += 4
                index = try position(of: "-->") + 3
            } else if starts(with: "<?") {
                index += 2
                // Targets starting with `xml` are reserved; `xml` itself is the
                // declaration, which only comes first, and Foundation read
                // `<?xml...` at the start as one whatever followed.
                guard try !name().lowercased().hasPrefix("xml") else { throw MalformedDocument() }
                index = try position(of: "?>") + 2
            } else {
                return
            }
        }
    }

    // MARK: - Bytes

    var next: UInt8? { index < bytes.count ? bytes[index] : nil }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0a || byte == 0x0d || byte == 0x09
    }

    /// Skips XML whitespace; says whether there was any.
    @discardableResult
    mutating func skipWhitespace() -> Bool {
        let start = index
        while let byte = next, Self.isWhitespace(byte) { index += 1 }
        return index > start
    }

    mutating func expect(_ byte: UInt8) throws {
        guard next == byte else { throw MalformedDocument() }
        index += 1
    }

    func starts(with prefix: StaticString, at position: Int? = nil) -> Bool {
        let at = position ?? index
        // memcmp, not a comparison of two generic sequences (at every tag).
        return prefix.withUTF8Buffer { prefix in
            at >= 0 && bytes.count - at >= prefix.count
                && bytes.withUnsafeBufferPointer { memcmp($0.baseAddress! + at, prefix.baseAddress!, prefix.count) == 0 }
        }
    }

    /// Where `terminator` next starts, from the current position.
    func position(of terminator: StaticString) throws -> Int {
        let offset: Int? = terminator.withUTF8Buffer { terminator -> Int? in
            guard index >= 0, bytes.count - index >= terminator.count else { return nil }
            return bytes.withUnsafeBufferPointer { buffer -> Int? in
                // memchr to each candidate's first byte, memcmp for the rest.
                let base = UnsafeRawPointer(buffer.baseAddress!)
                let last = buffer.count - terminator.count
                var at = index
                while at <= last {
                    guard let hit = memchr(base + at, Int32(terminator[0]), last - at + 1) else { return nil }
                    at = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + at, terminator.baseAddress!, terminator.count) == 0 { return at }
                    at += 1
                }
                return nil
            }
        }
        guard let offset else { throw MalformedDocument() }
        return offset
    }
}
