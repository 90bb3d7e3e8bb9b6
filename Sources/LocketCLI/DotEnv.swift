/// A dotenv file for `exec --env-file`, read as python-dotenv, Go's
/// godotenv and Node's dotenv agree on:
///
/// - `NAME=VALUE` lines, `export NAME=VALUE` too; blanks around `=` are
///   allowed; NAME is a shell variable name.
/// - Blank lines and lines starting with `#` are skipped.
/// - An unquoted value ends at the end of the line, or at a `#` that starts
///   it or follows a space or tab (a comment); surrounding blanks are dropped.
/// - `'single quotes'` hold text as is, with no escapes.
/// - `"double quotes"` understand `\n`, `\r`, `\t`, `\"` and `\\`; any other
///   backslash is kept as it is.
/// - Quoted values may span lines; after the closing quote only blanks and a
///   comment may follow.
/// - No variable expansion: `$HOME` is five characters, as in Docker's
///   `--env-file` and Node's dotenv.
/// - CRLF line ends and a UTF-8 byte order mark are accepted; the file must be UTF-8.
/// - Of two lines for one NAME, the last wins.
///
/// Anything else (a line without `=`, a bad name, an unclosed quote) is an
/// error naming the line, never a silent guess.
enum DotEnv {
    /// One assignment, with the line it started on.
    struct Entry: Equatable {
        let name: String
        let value: String
        let line: Int
    }

    struct Malformed: Error, Equatable {
        let line: Int
        let reason: String
    }

    static func parse(_ input: [UInt8]) throws -> [Entry] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(input.count)
        var k = input.starts(with: [0xef, 0xbb, 0xbf]) ? 3 : 0
        while k < input.count {
            // CRLF becomes LF everywhere, quoted values included, as the libraries do.
            if input[k] == 0x0d, k + 1 < input.count, input[k + 1] == 0x0a { k += 1; continue }
            bytes.append(input[k])
            k += 1
        }
        var entries: [Entry] = []
        var i = 0
        var line = 1
        func blank(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
        func skipBlanks() { while i < bytes.count, blank(bytes[i]) { i += 1 } }
        func skipLine() { while i < bytes.count, bytes[i] != 0x0a { i += 1 } }
        func isNameStart(_ b: UInt8) -> Bool {
            b == UInt8(ascii: "_") || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(b) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b)
        }
        func isName(_ b: UInt8) -> Bool { isNameStart(b) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) }
        func text(_ value: [UInt8], _ at: Int) throws -> String {
            guard let s = String(validating: value, as: UTF8.self), !value.contains(0) else {
                throw Malformed(line: at, reason: "the value is not UTF-8 text")
            }
            return s
        }

        while i < bytes.count {
            skipBlanks()
            guard i < bytes.count else { break }
            if bytes[i] == 0x0a { i += 1; line += 1; continue }
            if bytes[i] == UInt8(ascii: "#") { skipLine(); continue }
            let start = line
            if bytes.count - i >= 7, Array(bytes[i..<(i + 6)]) == Array("export".utf8), blank(bytes[i + 6]) {
                i += 6
                skipBlanks()
            }
            let nameStart = i
            guard i < bytes.count, isNameStart(bytes[i]) else {
                throw Malformed(line: start, reason: "expected NAME=VALUE, where NAME is letters, digits and _ not starting with a digit")
            }
            while i < bytes.count, isName(bytes[i]) { i += 1 }
            let name = String(decoding: bytes[nameStart..<i], as: UTF8.self)
            skipBlanks()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "=") else {
                throw Malformed(line: start, reason: "no = after \(name.prefix(40))")
            }
            i += 1
            skipBlanks()
            var value: [UInt8] = []
            if i < bytes.count, bytes[i] == UInt8(ascii: "\"") || bytes[i] == UInt8(ascii: "'") {
                let quote = bytes[i]
                i += 1
                var closed = false
                while i < bytes.count {
                    let b = bytes[i]
                    if b == quote { closed = true; i += 1; break }
                    if b == 0x0a { line += 1 }
                    if quote == UInt8(ascii: "\""), b == UInt8(ascii: "\\"), i + 1 < bytes.count {
                        let e = bytes[i + 1]
                        switch e {
                        case UInt8(ascii: "n"): value.append(0x0a); i += 2; continue
                        case UInt8(ascii: "r"): value.append(0x0d); i += 2; continue
                        case UInt8(ascii: "t"): value.append(0x09); i += 2; continue
                        case UInt8(ascii: "\""), UInt8(ascii: "\\"): value.append(e); i += 2; continue
                        default: break
                        }
                    }
                    value.append(b)
                    i += 1
                }
                guard closed else {
                    throw Malformed(line: start, reason: "the \(quote == UInt8(ascii: "'") ? "single" : "double")-quoted value of \(name.prefix(40)) is not closed")
                }
                skipBlanks()
                if i < bytes.count, bytes[i] == UInt8(ascii: "#") { skipLine() }
                guard i == bytes.count || bytes[i] == 0x0a else {
                    throw Malformed(line: line, reason: "unexpected text after the closing quote of \(name.prefix(40))")
                }
            } else {
                while i < bytes.count, bytes[i] != 0x0a {
                    if bytes[i] == UInt8(ascii: "#"), value.isEmpty || blank(value[value.count - 1]) { skipLine(); break }
                    value.append(bytes[i])
                    i += 1
                }
                while let last = value.last, blank(last) { value.removeLast() }
            }
            entries.append(Entry(name: name, value: try text(value, start), line: start))
        }
        return entries
    }
}
