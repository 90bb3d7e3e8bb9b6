/// An `inject` template: text with `{{ locket:REF }}` placeholders.
///
/// A placeholder is `{{`, optional spaces or tabs, `locket:`, the reference,
/// optional spaces, an optional `| base64` filter, and `}}`, all on one line.
/// Any other `{{` (Go templates, Jinja, Helm) is text and passes through
/// unchanged. Backslashes directly before a placeholder's `{{` escape it, as
/// in Handlebars: `\{{ locket:REF }}` is written as the text `{{ locket:REF }}`,
/// and `\\{{ locket:REF }}` as one backslash and the secret. A template
/// without placeholders comes out byte for byte as it went in.
struct Template {
    /// What a placeholder does with the secret.
    enum Filter: String {
        /// The secret's bytes in RFC 4648 base64: binary secrets in a text file.
        case base64
    }

    /// One placeholder: where it was, the reference, the filter.
    struct Placeholder {
        let reference: String
        let filter: Filter?
        let line: Int
    }

    enum Piece {
        case text(Range<Int>)
        /// Bytes an escape left: `{{` or backslashes.
        case literal([UInt8])
        case placeholder(Placeholder)
    }

    /// A malformed placeholder, with its line.
    struct Malformed: Error {
        let line: Int
        let reason: String
    }

    let bytes: [UInt8]
    private(set) var pieces: [Piece] = []

    var placeholders: [Placeholder] {
        pieces.compactMap { if case .placeholder(let p) = $0 { p } else { nil } }
    }

    private static let open = Array("{{".utf8)
    private static let keyword = Array("locket:".utf8)

    init(parsing bytes: [UInt8]) throws {
        self.bytes = bytes
        var line = 1
        var textStart = 0
        var i = 0
        while i < bytes.count {
            if bytes[i] == 0x0a { line += 1 }
            guard bytes[i] == UInt8(ascii: "{"), Template.startsPlaceholder(bytes, at: i) else { i += 1; continue }
            var slashes = 0
            while i - slashes - 1 >= textStart, bytes[i - slashes - 1] == UInt8(ascii: "\\") { slashes += 1 }
            pieces.append(.text(textStart..<(i - slashes)))
            if slashes > 0 { pieces.append(.literal([UInt8](repeating: UInt8(ascii: "\\"), count: slashes / 2))) }
            if slashes % 2 == 1 {
                // Escaped: the braces are text, and so is what follows them.
                pieces.append(.literal(Template.open))
                i += 2
                textStart = i
                continue
            }
            let (placeholder, end) = try Template.placeholder(bytes, at: i, line: line)
            pieces.append(.placeholder(placeholder))
            i = end
            textStart = i
        }
        pieces.append(.text(textStart..<bytes.count))
    }

    /// Whether `{{`, optional blanks and `locket:` start at `i`.
    private static func startsPlaceholder(_ bytes: [UInt8], at i: Int) -> Bool {
        guard i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "{") else { return false }
        var j = i + 2
        while j < bytes.count, bytes[j] == 0x20 || bytes[j] == 0x09 { j += 1 }
        return bytes.count - j >= keyword.count && Array(bytes[j..<(j + keyword.count)]) == keyword
    }

    /// The placeholder starting at `i` and the index after its `}}`.
    private static func placeholder(_ bytes: [UInt8], at i: Int, line: Int) throws -> (Placeholder, Int) {
        var j = i + 2
        while bytes[j] == 0x20 || bytes[j] == 0x09 { j += 1 }
        j += keyword.count
        let start = j
        while j + 1 < bytes.count, !(bytes[j] == UInt8(ascii: "}") && bytes[j + 1] == UInt8(ascii: "}")) {
            guard bytes[j] != 0x0a else { throw Malformed(line: line, reason: "a {{ locket: placeholder is not closed with }} on its line") }
            j += 1
        }
        guard j + 1 < bytes.count else { throw Malformed(line: line, reason: "a {{ locket: placeholder is not closed with }}") }
        let inside = bytes[start..<j]
        let parts = inside.split(separator: UInt8(ascii: "|"), maxSplits: 1, omittingEmptySubsequences: false)
        let referenceBytes = trimmed(parts[0])
        guard !referenceBytes.isEmpty else { throw Malformed(line: line, reason: "a placeholder has no reference after locket:") }
        guard let reference = String(validating: referenceBytes, as: UTF8.self) else {
            throw Malformed(line: line, reason: "a placeholder's reference is not valid UTF-8")
        }
        var filter: Filter?
        if parts.count > 1 {
            let name = String(decoding: trimmed(parts[1]), as: UTF8.self)
            guard let known = Filter(rawValue: name) else {
                throw Malformed(line: line, reason: "unknown filter '\(name.prefix(40))' (the one filter is base64)")
            }
            filter = known
        }
        return (Placeholder(reference: reference, filter: filter, line: line), j + 2)
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var s = bytes
        while let first = s.first, first == 0x20 || first == 0x09 { s = s.dropFirst() }
        while let last = s.last, last == 0x20 || last == 0x09 { s = s.dropLast() }
        return s
    }
}
