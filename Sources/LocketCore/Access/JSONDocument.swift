import LocketSupport

/// A strict JSON parser (RFC 8259) for entitlements files: UTF-8 with an
/// optional byte order mark, one value, nothing after it but whitespace.
/// No trailing commas, comments, leading zeros, lone surrogates or
/// unescaped control characters, anywhere in the document.
struct JSONDocument {
    private let bytes: [UInt8]
    private var index: Int

    private init(_ bytes: [UInt8]) {
        self.bytes = bytes
        index = bytes.starts(with: [0xef, 0xbb, 0xbf]) ? 3 : 0
    }

    /// Parses a whole JSON document. Of two equal keys in an object the
    /// first is kept, as Foundation's JSONDecoder did.
    static func parse(_ bytes: [UInt8]) throws -> DocumentValue {
        var parser = JSONDocument(bytes)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw MalformedDocument() }
        return value
    }

    private var next: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = next, byte == 0x20 || byte == 0x0a || byte == 0x0d || byte == 0x09 { index += 1 }
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard next == byte else { throw MalformedDocument() }
        index += 1
    }

    /// `depth` counts the arrays and objects around the value.
    private mutating func value(depth: Int) throws -> DocumentValue {
        guard let byte = next else { throw MalformedDocument() }
        switch byte {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .other
        case UInt8(ascii: "f"): try literal("false"); return .other
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number(); return .other
        default: throw MalformedDocument()
        }
    }

    private mutating func object(depth: Int) throws -> DocumentValue {
        guard depth <= DocumentValue.maximumDepth else { throw MalformedDocument() }
        index += 1
        var members: [String: DocumentValue] = [:]
        skipWhitespace()
        if next == UInt8(ascii: "}") {
            index += 1
            return .dictionary(members)
        }
        while true {
            skipWhitespace()
            guard next == UInt8(ascii: "\"") else { throw MalformedDocument() }
            let key = try string()
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            let value = try value(depth: depth)
            if members[key] == nil { members[key] = value }
            skipWhitespace()
            guard next == UInt8(ascii: ",") else { break }
            index += 1
        }
        try expect(UInt8(ascii: "}"))
        return .dictionary(members)
    }

    private mutating func array(depth: Int) throws -> DocumentValue {
        guard depth <= DocumentValue.maximumDepth else { throw MalformedDocument() }
        index += 1
        var elements: [DocumentValue] = []
        skipWhitespace()
        if next == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth))
            skipWhitespace()
            guard next == UInt8(ascii: ",") else { break }
            index += 1
        }
        try expect(UInt8(ascii: "]"))
        return .array(elements)
    }

    private mutating func literal(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count,
              word.withUTF8Buffer({ $0.elementsEqual(bytes[index..<index + count]) }) else { throw MalformedDocument() }
        index += count
    }

    /// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; its value is not needed.
    private mutating func number() throws {
        if next == UInt8(ascii: "-") { index += 1 }
        if next == UInt8(ascii: "0") { index += 1 } else { try digits() }
        if next == UInt8(ascii: ".") {
            index += 1
            try digits()
        }
        if next == UInt8(ascii: "e") || next == UInt8(ascii: "E") {
            index += 1
            if next == UInt8(ascii: "+") || next == UInt8(ascii: "-") { index += 1 }
            try digits()
        }
    }

    private mutating func digits() throws {
        let start = index
        while let byte = next, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
        guard index > start else { throw MalformedDocument() }
    }

    /// A string from its opening quote; its UTF-8 is validated here, which
    /// with the ASCII-only grammar around strings validates the document.
    private mutating func string() throws -> String {
        index += 1
        var utf8: [UInt8] = []
        var start = index
        while true {
            guard let byte = next else { throw MalformedDocument() }
            switch byte {
            case UInt8(ascii: "\""):
                utf8 += bytes[start..<index]
                index += 1
                guard let string = String(validating: utf8, as: UTF8.self) else { throw MalformedDocument() }
                return string
            case UInt8(ascii: "\\"):
                utf8 += bytes[start..<index]
                index += 1
                try escape(into: &utf8)
                start = index
            case 0..<0x20:
                throw MalformedDocument()
            default:
                index += 1
            }
        }
    }

    private mutating func escape(into utf8: inout [UInt8]) throws {
        guard let byte = next else { throw MalformedDocument() }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(byte)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0c)
        case UInt8(ascii: "n"): utf8.append(0x0a)
        case UInt8(ascii: "r"): utf8.append(0x0d)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            var value = try hexQuad()
            if (0xd800...0xdbff).contains(value) {
                // A high surrogate means nothing without the low one after it.
                guard next == UInt8(ascii: "\\") else { throw MalformedDocument() }
                index += 1
                guard next == UInt8(ascii: "u") else { throw MalformedDocument() }
                index += 1
                let low = try hexQuad()
                guard (0xdc00...0xdfff).contains(low) else { throw MalformedDocument() }
                value = 0x10000 + ((value - 0xd800) << 10) + (low - 0xdc00)
            }
            // Unicode.Scalar refuses a lone low surrogate.
            guard let scalar = Unicode.Scalar(value) else { throw MalformedDocument() }
            UTF8.encode(scalar) { utf8.append($0) }
        default:
            throw MalformedDocument()
        }
    }

    private mutating func hexQuad() throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = next.flatMap(hexDigit) else { throw MalformedDocument() }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
