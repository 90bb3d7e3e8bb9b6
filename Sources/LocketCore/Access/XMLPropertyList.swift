import LocketSupport

/// A strict parser for Apple's XML property lists, the format Xcode writes
/// `.entitlements` files in: UTF-8 (an optional byte order mark; a declared
/// encoding other than UTF-8 is refused), an optional DOCTYPE without an
/// internal subset, comments and processing instructions between elements,
/// `<plist>` around exactly one value (or, as Foundation allowed, the value
/// alone), and after it nothing but whitespace, comments and processing
/// instructions.
///
/// `string` and `key` content may hold the five predefined entities,
/// character references and CDATA sections. `integer`, `real`, `date` and
/// `data` are only checked to be well-formed XML: entitlements never read
/// them, and Foundation's PropertyListDecoder, which locket used before,
/// did not check them either unless asked for their value.
struct XMLPropertyList {
    private let bytes: [UInt8]
    private var index: Int

    private enum Tag: String {
        case plist, dict, key, array, string, data, date, real, integer, `true`, `false`
    }

    private struct StartTag {
        let tag: Tag
        /// Written `<tag/>`.
        let isEmpty: Bool
    }

    /// Parses a whole XML property list. Of two equal keys in a dictionary
    /// the last is kept, as Foundation's PropertyListDecoder did.
    static func parse(_ bytes: [UInt8]) throws -> DocumentValue {
        let start = bytes.starts(with: [0xef, 0xbb, 0xbf]) ? 3 : 0
        // The parser slices only at ASCII delimiters: a valid whole has valid parts.
        guard String(validating: bytes[start...], as: UTF8.self) != nil else { throw MalformedDocument() }
        var parser = XMLPropertyList(bytes: bytes, index: start)
        try parser.prolog()
        let root = try parser.startTag()
        let value: DocumentValue
        if root.tag == .plist {
            guard !root.isEmpty else { throw MalformedDocument() }
            try parser.skipMisc()
            value = try parser.element(parser.startTag(), depth: 0)
            try parser.skipMisc()
            try parser.endTag(.plist)
        } else {
            // A bare value without <plist> around it, which Foundation accepted too.
            value = try parser.element(root, depth: 0)
        }
        try parser.skipMisc()
        guard parser.index == bytes.count else { throw MalformedDocument() }
        return value
    }

    // MARK: - Elements

    /// The value `start` opens, through its end tag. `depth` counts the
    /// arrays and dictionaries around it.
    private mutating func element(_ start: StartTag, depth: Int) throws -> DocumentValue {
        switch start.tag {
        case .plist, .key:
            // plist is only the root; a key only comes before its value in a dict.
            throw MalformedDocument()
        case .dict:
            return start.isEmpty ? .dictionary([:]) : try dictionary(depth: depth + 1)
        case .array:
            return start.isEmpty ? .array([]) : try array(depth: depth + 1)
        case .string:
            guard !start.isEmpty else { return .string("") }
            let string = try characterData(cdata: true)
            try endTag(.string)
            return .string(string)
        case .true, .false:
            if !start.isEmpty { try endTag(start.tag) }
            return .other
        case .integer, .real, .date, .data:
            // Foundation refused `<integer/>` and the like, though it took `<integer></integer>`.
            guard !start.isEmpty else { throw MalformedDocument() }
            _ = try characterData()
            try endTag(start.tag)
            return .other
        }
    }

    private mutating func dictionary(depth: Int) throws -> DocumentValue {
        guard depth <= DocumentValue.maximumDepth else { throw MalformedDocument() }
        var entries: [String: DocumentValue] = [:]
        while true {
            try skipMisc()
            if starts(with: "</") { break }
            let keyTag = try startTag()
            guard keyTag.tag == .key, !keyTag.isEmpty else { throw MalformedDocument() }
            let key = try characterData(cdata: true)
            try endTag(.key)
            try skipMisc()
            entries[key] = try element(startTag(), depth: depth)
        }
        try endTag(.dict)
        // How XML property lists write an NSKeyedArchiver UID; Foundation
        // read it as a UID, not as a dictionary.
        if entries.count == 1, entries["CF$UID"] != nil { return .other }
        return .dictionary(entries)
    }

    private mutating func array(depth: Int) throws -> DocumentValue {
        guard depth <= DocumentValue.maximumDepth else { throw MalformedDocument() }
        var elements: [DocumentValue] = []
        while true {
            try skipMisc()
            if starts(with: "</") { break }
            elements.append(try element(startTag(), depth: depth))
        }
        try endTag(.array)
        return .array(elements)
    }

    // MARK: - Tags

    private mutating func startTag() throws -> StartTag {
        try expect(UInt8(ascii: "<"))
        guard let tag = Tag(rawValue: try name()) else { throw MalformedDocument() }
        while true {
            let spaced = skipWhitespace()
            if next == UInt8(ascii: ">") {
                index += 1
                return StartTag(tag: tag, isEmpty: false)
            }
            if starts(with: "/>") {
                index += 2
                return StartTag(tag: tag, isEmpty: true)
            }
            guard spaced else { throw MalformedDocument() }
            _ = try attribute()
        }
    }

    private mutating func endTag(_ tag: Tag) throws {
        guard starts(with: "</") else { throw MalformedDocument() }
        index += 2
        guard try name() == tag.rawValue else { throw MalformedDocument() }
        skipWhitespace()
        try expect(UInt8(ascii: ">"))
    }

    /// `name="value"` or `name='value'`; plist's `version` is the only one
    /// Apple writes, and none changes how the document reads.
    private mutating func attribute() throws -> (name: String, value: String) {
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

    private mutating func name() throws -> String {
        let start = index
        while let byte = next, Self.isNameByte(byte) { index += 1 }
        guard index > start else { throw MalformedDocument() }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
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
    private mutating func characterData(quote: UInt8? = nil, cdata: Bool = false) throws -> String {
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

    // MARK: - Prolog and the rest

    private mutating func prolog() throws {
        // Foundation allowed whitespace before the declaration, and so do the tests.
        skipWhitespace()
        if starts(with: "<?xml"), index + 5 < bytes.count, Self.isWhitespace(bytes[index + 5]) || bytes[index + 5] == UInt8(ascii: "?") {
            try declaration()
        }
        try skipMisc()
        if starts(with: "<!DOCTYPE") {
            try doctype()
            try skipMisc()
        }
    }

    /// `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`; any
    /// encoding named must be UTF-8. Foundation sought `encoding=` in the
    /// declaration's bytes, so the values are kept to what versions and
    /// encoding names are made of: the search cannot find one inside another.
    private mutating func declaration() throws {
        index += 5
        while true {
            let spaced = skipWhitespace()
            if starts(with: "?>") {
                index += 2
                return
            }
            guard spaced else { throw MalformedDocument() }
            let (name, value) = try attribute()
            guard ["version", "encoding", "standalone"].contains(name), !value.isEmpty,
                  value.utf8.allSatisfy({ Self.isNameByte($0) && $0 < 0x80 && $0 != UInt8(ascii: ":") }),
                  name != "encoding" || value.lowercased() == "utf-8" else { throw MalformedDocument() }
        }
    }

    /// `<!DOCTYPE plist PUBLIC "..." "...">`, up to the first `>` as
    /// Foundation read it. An internal subset could declare entities; it is
    /// refused, as Foundation refused it.
    private mutating func doctype() throws {
        index += 9
        guard skipWhitespace() else { throw MalformedDocument() }
        let end = try position(of: ">")
        guard !bytes[index..<end].contains(UInt8(ascii: "[")) else { throw MalformedDocument() }
        index = end + 1
    }

    /// Whitespace, comments and processing instructions, which may come
    /// before, between and after elements.
    private mutating func skipMisc() throws {
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

    private var next: UInt8? { index < bytes.count ? bytes[index] : nil }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0a || byte == 0x0d || byte == 0x09
    }

    /// Skips XML whitespace; says whether there was any.
    @discardableResult
    private mutating func skipWhitespace() -> Bool {
        let start = index
        while let byte = next, Self.isWhitespace(byte) { index += 1 }
        return index > start
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard next == byte else { throw MalformedDocument() }
        index += 1
    }

    private func starts(with prefix: StaticString, at position: Int? = nil) -> Bool {
        let at = position ?? index
        let count = prefix.utf8CodeUnitCount
        return bytes.count - at >= count && prefix.withUTF8Buffer { $0.elementsEqual(bytes[at..<at + count]) }
    }

    /// Where `terminator` next starts, from the current position.
    private func position(of terminator: StaticString) throws -> Int {
        var at = index
        while at < bytes.count {
            if starts(with: terminator, at: at) { return at }
            at += 1
        }
        throw MalformedDocument()
    }
}
