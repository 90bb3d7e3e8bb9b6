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

    static func text(_ item: Item, _ options: Options, into out: OutputBuffer) {
        func field(_ name: String, _ value: String) { out.line("\(name): \(value)") }
        field("class", item.itemClass.rawValue)
        if item.availability != .available || options.status {
            field("status", item.availability.rawValue)
        }
        for attribute in item.itemClass.attributes {
            let value = item[attribute]
            if value.isEmpty { continue }
            field(attribute.longName, display(attribute, value))
        }
        field("access-group", escape(Array(item.accessGroup.utf8)))
        field("accessible", item.accessible.name)
        if item.availability == .available {
            field("created", Dates.rfc3339(milliseconds: item.creationDate))
            field("modified", Dates.rfc3339(milliseconds: item.modificationDate))
        }
        if options.ref { field("ref", hex(item.persistentRef)) }
        if options.data, let data = item.data {
            data.withUnsafeBytes { field("data", escape(Array($0))) }
        }
    }

    static func display(_ attribute: Attribute, _ value: [UInt8]) -> String {
        switch attribute.kind {
        case .port: String(AttributeValue.port(value))
        case .bytes: escape(value)
        default: escape(value)
        }
    }

    /// Printable text: control characters and invalid UTF-8 as escapes, so a
    /// value can never break the line structure or the terminal.
    static func escape(_ bytes: [UInt8]) -> String {
        guard let s = String(validating: bytes, as: UTF8.self),
              !s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f || $0 == "\\" }) else {
            var out = ""
            var decoded = bytes[...]
            while let first = decoded.first {
                if first < 0x80 {
                    switch first {
                    case 0x0a: out += "\\n"
                    case 0x09: out += "\\t"
                    case 0x0d: out += "\\r"
                    case UInt8(ascii: "\\"): out += "\\\\"
                    case 0..<0x20, 0x7f: out += "\\x" + hex([first])
                    default: out.unicodeScalars.append(Unicode.Scalar(first))
                    }
                    decoded = decoded.dropFirst()
                    continue
                }
                // A multi-byte sequence: keep it when valid, escape its first byte otherwise.
                let length = first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : first >= 0xc0 ? 2 : 1
                if length > 1, decoded.count >= length, let chunk = String(validating: decoded.prefix(length), as: UTF8.self) {
                    out += chunk
                    decoded = decoded.dropFirst(length)
                } else {
                    out += "\\x" + hex([first])
                    decoded = decoded.dropFirst()
                }
            }
            return out
        }
        return s
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 0xf)]) }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: - JSON

    static func json(_ item: Item, _ options: Options, into w: inout JSONWriter) {
        w.beginObject()
            w.key("class"); w.string(item.itemClass.rawValue)
            if options.status { w.key("status"); w.string(item.availability.rawValue) }
            if item.availability == .available {
                for attribute in item.itemClass.attributes {
                    w.key(attribute.jsonKey)
                    let value = item[attribute]
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

/// RFC 3339 timestamps in UTC.
enum Dates {
    static func rfc3339(milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ v: Int32, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(milliseconds % 1000), 3))Z"
    }
}
