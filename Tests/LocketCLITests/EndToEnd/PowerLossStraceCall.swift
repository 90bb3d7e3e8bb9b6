import Foundation

/// One system call of the log: `name(arguments) = result`.
struct StraceCall {
    var name: String
    var arguments: [String]
    var result: Int
    /// The result as printed (`3</path>` for a descriptor).
    var returned: String

    /// nil for a line that is not a finished call.
    ///
    /// Over the line's UTF-8 bytes: every delimiter is ASCII (under -xx
    /// strace prints every other byte as `\xHH`), and a write's argument is
    /// its data in hex, four characters a byte, which a walk over
    /// `Character`s took a fifth of the power-loss suite's own CPU time for
    /// in the debug build (perf).
    init?(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard let open = bytes.firstIndex(of: UInt8(ascii: "(")) else { return nil }
        name = String(decoding: bytes[..<open], as: UTF8.self)
        var depth = 0
        var start = open + 1
        var arguments: [String] = []
        var index = open + 1
        var closed = false
        while index < bytes.count {
            let c = bytes[index]
            if c == UInt8(ascii: "(") || c == UInt8(ascii: "[") || c == UInt8(ascii: "{") || c == UInt8(ascii: "<") { depth += 1 }
            if c == UInt8(ascii: ")") || c == UInt8(ascii: "]") || c == UInt8(ascii: "}") || c == UInt8(ascii: ">") {
                if depth == 0 && c == UInt8(ascii: ")") { closed = true; break }
                depth -= 1
            }
            if c == UInt8(ascii: ",") && depth == 0 {
                arguments.append(Self.trimmed(bytes, start, index))
                start = index + 1
            }
            index += 1
        }
        guard closed else { return nil }
        let last = Self.trimmed(bytes, start, index)
        if !last.isEmpty || !arguments.isEmpty { arguments.append(last) }
        self.arguments = arguments
        // " = " after the closing parenthesis.
        var equals = index + 1
        while equals + 3 <= bytes.count
            && !(bytes[equals] == 0x20 && bytes[equals + 1] == UInt8(ascii: "=") && bytes[equals + 2] == 0x20) { equals += 1 }
        guard equals + 3 <= bytes.count else { return nil }
        returned = String(decoding: bytes[(equals + 3)...], as: UTF8.self)
        result = Int(returned.prefix { $0 == "-" || $0.isNumber }) ?? -1
    }

    /// `bytes[start..<end]` without the spaces and tabs around it.
    private static func trimmed(_ bytes: [UInt8], _ start: Int, _ end: Int) -> String {
        var (start, end) = (start, end)
        while start < end && (bytes[start] == 0x20 || bytes[start] == 0x09) { start += 1 }
        while end > start && (bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09) { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// `3</path>` -> (3, "/path"); `AT_FDCWD</cwd>` -> (-100, "/cwd").
    static func descriptor(_ argument: String) -> (Int, String?)? {
        let number = argument.prefix { $0 == "-" || $0.isNumber || $0.isUppercase || $0 == "_" }
        let fd = number == "AT_FDCWD" ? -100 : Int(number)
        guard let fd else { return nil }
        guard let open = argument.firstIndex(of: "<"), argument.hasSuffix(">") else { return (fd, nil) }
        let inner = argument[argument.index(after: open)..<argument.index(before: argument.endIndex)]
        return (fd, String(decoding: unescape(inner), as: UTF8.self))
    }

    /// The bytes of a quoted string argument; nil when it is not one or was cut (`"..."...`).
    static func bytes(_ argument: String) -> [UInt8]? {
        guard argument.hasPrefix("\""), argument.hasSuffix("\""), argument.utf8.count >= 2 else { return nil }
        return unescape(argument.dropFirst().dropLast())
    }

    /// The strings of an array argument: `["a", "b"]`.
    static func strings(in argument: String) -> [String] {
        guard argument.hasPrefix("[") else { return [] }
        return argument.dropFirst().dropLast().split(separator: ",").compactMap { part in
            bytes(part.trimmingCharacters(in: .whitespaces)).map { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// strace's escapes (`\xHH` under -xx, and the C ones it may still use) as bytes.
    static func unescape<S: StringProtocol>(_ text: S) -> [UInt8] {
        let utf8 = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 4)
        var i = 0
        func hex(_ c: UInt8) -> UInt8 { c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x57 }
        while i < utf8.count {
            if utf8[i] == 0x5c, i + 1 < utf8.count {
                switch utf8[i + 1] {
                case 0x78 where i + 3 < utf8.count:
                    out.append(hex(utf8[i + 2]) << 4 | hex(utf8[i + 3]))
                    i += 4
                    continue
                case 0x6e: out.append(0x0a)
                case 0x74: out.append(0x09)
                case 0x72: out.append(0x0d)
                default: out.append(utf8[i + 1])
                }
                i += 2
            } else {
                out.append(utf8[i])
                i += 1
            }
        }
        return out
    }
}
