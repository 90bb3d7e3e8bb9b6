import Foundation

/// One system call of the log: `name(arguments) = result`.
struct StraceCall {
    var name: String
    var arguments: [String]
    var result: Int
    /// The result as printed (`3</path>` for a descriptor).
    var returned: String

    /// nil for a line that is not a finished call.
    init?(_ text: String) throws {
        guard let open = text.firstIndex(of: "(") else { return nil }
        name = String(text[..<open])
        var depth = 0
        var current = ""
        var arguments: [String] = []
        var index = text.index(after: open)
        var closed = false
        while index < text.endIndex {
            let c = text[index]
            if c == "(" || c == "[" || c == "{" || c == "<" { depth += 1 }
            if c == ")" || c == "]" || c == "}" || c == ">" {
                if depth == 0 && c == ")" { closed = true; break }
                depth -= 1
            }
            if c == "," && depth == 0 {
                arguments.append(current.trimmingCharacters(in: .whitespaces))
                current = ""
            } else {
                current.append(c)
            }
            index = text.index(after: index)
        }
        guard closed else { return nil }
        if !current.trimmingCharacters(in: .whitespaces).isEmpty || !arguments.isEmpty {
            arguments.append(current.trimmingCharacters(in: .whitespaces))
        }
        self.arguments = arguments
        let tail = text[text.index(after: index)...]
        guard let equals = tail.range(of: " = ") else { return nil }
        returned = String(tail[equals.upperBound...])
        result = Int(returned.prefix { $0 == "-" || $0.isNumber }) ?? -1
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
        guard argument.hasPrefix("\""), argument.hasSuffix("\""), argument.count >= 2 else { return nil }
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
