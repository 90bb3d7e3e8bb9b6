import Glibc
import LocketCore

/// How items are printed: text for people, JSON for programs (SPEC §3 keys).
enum ItemPrinter {
    struct Options {
        var data = false
        var ref = false
        var status = false
    }

    // MARK: - Text

    /// Writes bytes, not Strings: a dump prints a dozen fields per item, and
    /// `-g` must not leave a String copy of the secret behind. The caller
    /// wipes `out` after use.
    static func text(_ item: Item, _ options: Options, into out: inout ByteWriter) {
        func field(_ name: String, _ value: (inout ByteWriter) -> Void) {
            out.text(name)
            out.text(": ")
            value(&out)
            out.byte(0x0a)
        }
        field("class") { $0.text(item.itemClass.rawValue) }
        if item.availability != .available || options.status {
            field("status") { $0.text(item.availability.rawValue) }
        }
        let values = byCode(item)
        for attribute in item.itemClass.attributes {
            let value = values[Int(attribute.rawValue)]
            if value.isEmpty { continue }
            field(attribute.longName) { out in
                if attribute.kind == .port {
                    out.text(String(AttributeValue.port(value)))
                } else {
                    value.withUnsafeBytes { escape($0, into: &out) }
                }
            }
        }
        var group = item.accessGroup
        field("access-group") { out in group.withUTF8 { escape(UnsafeRawBufferPointer($0), into: &out) } }
        field("accessible") { $0.text(item.accessible.name) }
        if item.availability == .available {
            field("created") { Dates.rfc3339(milliseconds: item.creationDate, into: &$0) }
            field("modified") { Dates.rfc3339(milliseconds: item.modificationDate, into: &$0) }
        }
        if options.ref { field("ref") { hex(item.persistentRef, into: &$0) } }
        if options.data, let data = item.data {
            field("data") { out in data.withUnsafeBytes { escape($0, into: &out) } }
        }
    }

    /// The item's values indexed by attribute code: one walk over the
    /// dictionary instead of a hashed lookup per printed attribute.
    private static let codeSlots = Int(Attribute.allCases.map(\.rawValue).max() ?? 0) + 1

    private static func byCode(_ item: Item) -> [[UInt8]] {
        var values = [[UInt8]](repeating: [], count: codeSlots)
        for (attribute, value) in item.attributes { values[Int(attribute.rawValue)] = value }
        return values
    }

    /// Printable text: control characters, backslashes and invalid UTF-8 as
    /// escapes, so a value can never break the line structure or the terminal.
    static func escape(_ bytes: UnsafeRawBufferPointer, into out: inout ByteWriter) {
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b < 0x80 {
                switch b {
                case 0x0a: out.text("\\n")
                case 0x09: out.text("\\t")
                case 0x0d: out.text("\\r")
                case UInt8(ascii: "\\"): out.text("\\\\")
                case 0..<0x20, 0x7f: out.text("\\x"); hex(b, into: &out)
                default: out.byte(b)
                }
                i += 1
                continue
            }
            // A multi-byte sequence: kept when valid, its first byte escaped otherwise.
            let length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1
            let sequence = UnsafeRawBufferPointer(rebasing: bytes[i..<min(i + length, bytes.count)])
            if length > 1, sequence.count == length, String(validating: sequence, as: UTF8.self) != nil {
                out.raw(sequence)
                i += length
            } else {
                out.text("\\x")
                hex(b, into: &out)
                i += 1
            }
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    static func hex(_ b: UInt8, into out: inout ByteWriter) {
        out.byte(hexDigits[Int(b >> 4)])
        out.byte(hexDigits[Int(b & 0xf)])
    }

    static func hex(_ bytes: [UInt8], into out: inout ByteWriter) {
        for b in bytes { hex(b, into: &out) }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(hexDigits[Int(b >> 4)]); out.append(hexDigits[Int(b & 0xf)]) }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: - JSON

    static func json(_ item: Item, _ options: Options, into w: inout JSONWriter) {
        w.beginObject()
            w.key("class"); w.string(item.itemClass.rawValue)
            if options.status { w.key("status"); w.string(item.availability.rawValue) }
            if item.availability == .available {
                let values = byCode(item)
                for attribute in item.itemClass.attributes {
                    w.key(attribute.jsonKey)
                    let value = values[Int(attribute.rawValue)]
                    switch attribute.kind {
                    case .port: w.int(Int64(AttributeValue.port(value)))
                    case .bytes: w.string(Base64.encode(value))
                    default: w.string(utf8: value)
                    }
                }
            }
            w.key("accessGroup"); w.string(item.accessGroup)
            w.key("accessible"); w.string(item.accessible.name)
            if item.availability == .available {
                w.key("creationDate"); w.string(Dates.rfc3339(milliseconds: item.creationDate))
                w.key("modificationDate"); w.string(Dates.rfc3339(milliseconds: item.modificationDate))
            }
            w.key("persistentRef"); w.string(hex(item.persistentRef))
            if options.data, let data = item.data {
                var bytes = data.bytes
                defer { for i in bytes.indices { bytes[i] = 0 } }
                if String(validating: bytes, as: UTF8.self) != nil {
                    w.key("data"); w.string(utf8: bytes)
                } else {
                    w.key("dataBase64"); w.string(Base64.encode(bytes))
                }
            }
        w.endObject()
    }
}

/// Bytes for one item's output, built in a value rather than straight in
/// the shared OutputBuffer: a class property pays a run-time exclusivity
/// check on every access, which was a fifth of a dump.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    mutating func byte(_ b: UInt8) { bytes.append(b) }

    mutating func text(_ s: String) {
        var s = s
        s.withUTF8 { bytes.append(contentsOf: $0) }
    }

    mutating func raw(_ b: UnsafeRawBufferPointer) { bytes.append(contentsOf: b) }

    /// Empties the writer for the next item; what it held may have been a secret.
    mutating func wipe() {
        for i in bytes.indices { bytes[i] = 0 }
        bytes.removeAll(keepingCapacity: true)
    }
}

/// RFC 4648 base64.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            for shift in [18, 12, 6, 0] { out.append(alphabet[Int(n >> UInt32(shift) & 63)]) }
            i += 3
        }
        let rest = bytes.count - i
        if rest > 0 {
            let n = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(rest == 2 ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(UInt8(ascii: "="))
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// RFC 3339 timestamps in UTC, with milliseconds.
enum Dates {
    static func rfc3339(milliseconds: Int64) -> String {
        var digits = [UInt8]()
        digits.reserveCapacity(24)
        write(milliseconds) { digits.append($0) }
        return String(decoding: digits, as: UTF8.self)
    }

    static func rfc3339(milliseconds: Int64, into out: inout ByteWriter) {
        write(milliseconds) { out.byte($0) }
    }

    private static func write(_ milliseconds: Int64, _ emit: (UInt8) -> Void) {
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func number(_ value: Int32, _ width: Int) {
            var v = Int(value)
            if v < 0 { emit(UInt8(ascii: "-")); v = -v }
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            while v / divisor >= 10 { divisor *= 10 }
            while divisor > 0 { emit(UInt8(ascii: "0") + UInt8(v / divisor % 10)); divisor /= 10 }
        }
        number(parts.tm_year + 1900, 4); emit(UInt8(ascii: "-"))
        number(parts.tm_mon + 1, 2); emit(UInt8(ascii: "-"))
        number(parts.tm_mday, 2); emit(UInt8(ascii: "T"))
        number(parts.tm_hour, 2); emit(UInt8(ascii: ":"))
        number(parts.tm_min, 2); emit(UInt8(ascii: ":"))
        number(parts.tm_sec, 2); emit(UInt8(ascii: "."))
        number(Int32(milliseconds % 1000), 3); emit(UInt8(ascii: "Z"))
    }
}
