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
    private var scanner: XMLScanner

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
        var parser = XMLPropertyList(scanner: XMLScanner(bytes: bytes, index: start))
        try parser.prolog()
        let root = try parser.startTag()
        let value: DocumentValue
        if root.tag == .plist {
            guard !root.isEmpty else { throw MalformedDocument() }
            try parser.scanner.skipMisc()
            value = try parser.element(parser.startTag(), depth: 0)
            try parser.scanner.skipMisc()
            try parser.endTag(.plist)
        } else {
            // A bare value without <plist> around it, which Foundation accepted too.
            value = try parser.element(root, depth: 0)
        }
        try parser.scanner.skipMisc()
        guard parser.scanner.index == bytes.count else { throw MalformedDocument() }
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
            let string = try scanner.characterData(cdata: true)
            try endTag(.string)
            return .string(string)
        case .true, .false:
            if !start.isEmpty { try endTag(start.tag) }
            return .other
        case .integer, .real, .date, .data:
            // Foundation refused `<integer/>` and the like, though it took `<integer></integer>`.
            guard !start.isEmpty else { throw MalformedDocument() }
            _ = try scanner.characterData()
            try endTag(start.tag)
            return .other
        }
    }

    private mutating func dictionary(depth: Int) throws -> DocumentValue {
        guard depth <= DocumentValue.maximumDepth else { throw MalformedDocument() }
        var entries: [String: DocumentValue] = [:]
        while true {
            try scanner.skipMisc()
            if scanner.starts(with: "</") { break }
            let keyTag = try startTag()
            guard keyTag.tag == .key, !keyTag.isEmpty else { throw MalformedDocument() }
            let key = try scanner.characterData(cdata: true)
            try endTag(.key)
            try scanner.skipMisc()
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
            try scanner.skipMisc()
            if scanner.starts(with: "</") { break }
            elements.append(try element(startTag(), depth: depth))
        }
        try endTag(.array)
        return .array(elements)
    }

    // MARK: - Tags

    private mutating func startTag() throws -> StartTag {
        try scanner.expect(UInt8(ascii: "<"))
        guard let tag = Tag(rawValue: try scanner.name()) else { throw MalformedDocument() }
        while true {
            let spaced = scanner.skipWhitespace()
            if scanner.next == UInt8(ascii: ">") {
                scanner.index += 1
                return StartTag(tag: tag, isEmpty: false)
            }
            if scanner.starts(with: "/>") {
                scanner.index += 2
                return StartTag(tag: tag, isEmpty: true)
            }
            guard spaced else { throw MalformedDocument() }
            _ = try scanner.attribute()
        }
    }

    private mutating func endTag(_ tag: Tag) throws {
        guard scanner.starts(with: "</") else { throw MalformedDocument() }
        scanner.index += 2
        guard try scanner.name() == tag.rawValue else { throw MalformedDocument() }
        scanner.skipWhitespace()
        try scanner.expect(UInt8(ascii: ">"))
    }

    // MARK: - Prolog

    private mutating func prolog() throws {
        // Foundation allowed whitespace before the declaration, and so do the tests.
        scanner.skipWhitespace()
        let afterXML = scanner.index + 5
        if scanner.starts(with: "<?xml"), afterXML < scanner.bytes.count,
           XMLScanner.isWhitespace(scanner.bytes[afterXML]) || scanner.bytes[afterXML] == UInt8(ascii: "?") {
            try declaration()
        }
        try scanner.skipMisc()
        if scanner.starts(with: "<!DOCTYPE") {
            try doctype()
            try scanner.skipMisc()
        }
    }

    /// `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`; any
    /// encoding named must be UTF-8. Foundation sought `encoding=` in the
    /// declaration's bytes, so the values are kept to what versions and
    /// encoding names are made of: the search cannot find one inside another.
    private mutating func declaration() throws {
        scanner.index += 5
        while true {
            let spaced = scanner.skipWhitespace()
            if scanner.starts(with: "?>") {
                scanner.index += 2
                return
            }
            guard spaced else { throw MalformedDocument() }
            let (name, value) = try scanner.attribute()
            guard ["version", "encoding", "standalone"].contains(name), !value.isEmpty,
                  value.utf8.allSatisfy({ XMLScanner.isNameByte($0) && $0 < 0x80 && $0 != UInt8(ascii: ":") }),
                  name != "encoding" || value.lowercased() == "utf-8" else { throw MalformedDocument() }
        }
    }

    /// `<!DOCTYPE plist PUBLIC "..." "...">`, up to the first `>` as
    /// Foundation read it. An internal subset could declare entities; it is
    /// refused, as Foundation refused it.
    private mutating func doctype() throws {
        scanner.index += 9
        guard scanner.skipWhitespace() else { throw MalformedDocument() }
        let end = try scanner.position(of: ">")
        guard !scanner.bytes[scanner.index..<end].contains(UInt8(ascii: "[")) else { throw MalformedDocument() }
        scanner.index = end + 1
    }
}
