import Glibc
import LocketCore
import LocketSupport

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
        // `name` is the label with its ": ", one append per field.
        func field(_ name: StaticString, _ value: (inout ByteWriter) -> Void) {
            out.literal(name)
            value(&out)
            out.byte(0x0a)
        }
        field("class: ") { $0.text(item.itemClass.rawValue) }
        if item.availability != .available || options.status {
            field("status: ") { $0.text(item.availability.rawValue) }
        }
        // Which codes the item has, as bits: a hashed lookup only for those
        // (a few of a class's dozen or more attributes), and no table per item.
        // A code past 63 (none yet) is looked up without the mask's help.
        var present: UInt64 = 0
        for (attribute, value) in item.attributes where !value.isEmpty && attribute.rawValue < 64 { present |= 1 << attribute.rawValue }
        for attribute in item.itemClass.attributes {
            if attribute.rawValue < 64 && present & (1 << attribute.rawValue) == 0 { continue }
            guard let value = item.attributes[attribute], !value.isEmpty else { continue }
            attributeLabels[Int(attribute.rawValue)].withUnsafeBytes { out.raw($0) }
            if attribute.kind == .port {
                out.text(String(AttributeValue.port(value)))
            } else if attribute.kind == .hex {
                hex(value, into: &out)
            } else {
                value.withUnsafeBytes { escape($0, into: &out) }
            }
            out.byte(0x0a)
        }
        if !item.freeForm.attributes.isEmpty { freeForm(item, into: &out) }
        var group = item.accessGroup
        field("access-group: ") { out in group.withUTF8 { escape(UnsafeRawBufferPointer($0), into: &out) } }
        field("accessible: ") { $0.text(item.accessible.name) }
        if item.attributes[.synchronizable] == [0x31] { field("synchronizable: ") { $0.text("yes") } }
        if let control = item.accessControl { field("access-control: ") { $0.text(control.text) } }
        if item.availability == .available || item.availability == .invalidated {
            field("created: ") { Dates.rfc3339(milliseconds: item.creationDate, into: &$0) }
            field("modified: ") { Dates.rfc3339(milliseconds: item.modificationDate, into: &$0) }
        }
        if options.ref { field("ref: ") { hex(item.persistentRef, into: &$0) } }
        if options.data, let data = item.data {
            // Room for the worst case (every byte as \xNN) first: growing
            // mid-secret would leave a copy of its start in a freed block.
            out.reserve(data.count * 4 + 8)
            field("data: ") { out in data.withUnsafeBytes { escape($0, into: &out) } }
        }
    }

    /// `attr.NAME: VALUE` lines, in name order (SPEC §18's free-form attributes).
    private static func freeForm(_ item: Item, into out: inout ByteWriter) {
        for (name, value) in item.freeForm.attributes.sorted(by: { $0.key < $1.key }) {
            out.literal("attr.")
            var name = name, value = value
            name.withUTF8 { escape(UnsafeRawBufferPointer($0), into: &out) }
            out.literal(": ")
            value.withUTF8 { escape(UnsafeRawBufferPointer($0), into: &out) }
            out.byte(0x0a)
        }
    }

    /// The item's values indexed by attribute code: one walk over the
    /// dictionary instead of a hashed lookup per printed attribute.
    private static let codeSlots = Int(Attribute.allCases.map(\.rawValue).max() ?? 0) + 1

    /// "service: " and the like, by attribute code, made once.
    private static let attributeLabels: [[UInt8]] = (0..<codeSlots).map { code in
        Attribute(rawValue: UInt8(code)).map { Array(($0.longName + ": ").utf8) } ?? []
    }

    private static func byCode(_ item: Item) -> [[UInt8]] {
        var values = [[UInt8]](repeating: [], count: codeSlots)
        for (attribute, value) in item.attributes { values[Int(attribute.rawValue)] = value }
        return values
    }

    /// Printable text (`Printable.escape`): control and bidirectional
    /// characters, backslashes and invalid UTF-8 as escapes, so a value can
    /// never break the line structure, drive the terminal or disguise itself.
    static func escape(_ bytes: UnsafeRawBufferPointer, into out: inout ByteWriter) {
        out.escaped(bytes)
    }

    static func hex(_ b: UInt8, into out: inout ByteWriter) {
        out.byte(Hex.digit(b >> 4))
        out.byte(Hex.digit(b & 0xf))
    }

    static func hex(_ bytes: [UInt8], into out: inout ByteWriter) {
        // Digits in a stack buffer, one append: a ref per item of a dump.
        withUnsafeTemporaryAllocation(byteCount: 2 * bytes.count, alignment: 1) { digits in
            for (i, b) in bytes.enumerated() {
                digits[2 * i] = Hex.digit(b >> 4)
                digits[2 * i + 1] = Hex.digit(b & 0xf)
            }
            out.raw(UnsafeRawBufferPointer(digits))
        }
    }

    // MARK: - JSON

    static func json(_ item: Item, _ options: Options, into w: inout JSONWriter) {
        w.beginObject()
            w.key("class"); w.string(item.itemClass.rawValue)
            if options.status { w.key("status"); w.string(item.availability.rawValue) }
            // An invalidated item's attributes still open; only its secret is gone.
            let opened = item.availability == .available || item.availability == .invalidated
            if opened {
                let values = byCode(item)
                for attribute in item.itemClass.attributes {
                    w.key(attribute.jsonKey)
                    let value = values[Int(attribute.rawValue)]
                    switch attribute.kind {
                    case .port: w.int(Int64(AttributeValue.port(value)))
                    case .bytes: w.string(Base64.encode(value))
                    case .hex: w.string(Hex.encode(value))
                    case .number: w.int(Int64(String(decoding: value, as: UTF8.self)) ?? 0)
                    case .boolean: w.bool(value == [0x31])
                    default: w.string(utf8: value)
                    }
                }
            }
            if opened && !item.freeForm.attributes.isEmpty {
                w.key("attributes")
                w.beginObject()
                for (name, value) in item.freeForm.attributes.sorted(by: { $0.key < $1.key }) {
                    w.key(name); w.string(value)
                }
                w.endObject()
            }
            w.key("accessGroup"); w.string(item.accessGroup)
            w.key("accessible"); w.string(item.accessible.name)
            // Only on the items that are (as accessControl): every other item's JSON stays as it was.
            if opened && item.attributes[.synchronizable] == [0x31] { w.key("synchronizable"); w.bool(true) }
            if let control = item.accessControl { w.key("accessControl"); w.string(control.text) }
            if opened {
                w.key("creationDate"); w.string(Dates.rfc3339(milliseconds: item.creationDate))
                w.key("modificationDate"); w.string(Dates.rfc3339(milliseconds: item.modificationDate))
            }
            w.key("persistentRef"); w.string(Hex.encode(item.persistentRef))
            if options.data, let data = item.data {
                var bytes = data.bytes
                defer { LocketSupport.wipe(&bytes) }
                // Room for the worst case (\u00XX per byte) first, and base64
                // straight into the writer: no unwiped copy of the secret.
                w.reserve(bytes.count * 6 + 32)
                if String(validating: bytes, as: UTF8.self) != nil {
                    w.key("data"); w.string(utf8: bytes)
                } else {
                    w.key("dataBase64"); w.base64(bytes)
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

    /// `b` through `Printable.escape`.
    mutating func escaped(_ b: UnsafeRawBufferPointer) { Printable.escape(b, into: &bytes) }

    mutating func reserve(_ additional: Int) { bytes.reserveCapacity(bytes.count + additional) }

    mutating func literal(_ s: StaticString) {
        bytes.append(contentsOf: UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// `value` in decimal, zero-padded to `width` digits (more if it needs them).
    mutating func number(_ value: Int64, width: Int) {
        var text = String(value.magnitude)
        if text.count < width { text = String(repeating: "0", count: width - text.count) + text }
        if value < 0 { byte(UInt8(ascii: "-")) }
        self.text(text)
    }

    /// Empties the writer for the next item; what it held may have been a secret.
    mutating func wipe() {
        LocketSupport.wipe(&bytes)
        bytes.removeAll(keepingCapacity: true)
    }
}

/// RFC 3339 timestamps in UTC, with milliseconds.
enum Dates {
    static func rfc3339(milliseconds: Int64) -> String {
        var w = ByteWriter()
        rfc3339(milliseconds: milliseconds, into: &w)
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// The civil date by arithmetic (days from 1970 to year/month/day, as in
    /// H. Hinnant's chrono algorithms) rather than gmtime_r: a dump prints
    /// two dates per item, and gmtime's time-zone machinery was 5 % of it.
    static func rfc3339(milliseconds: Int64, into out: inout ByteWriter) {
        func floorDivide(_ a: Int64, _ b: Int64) -> (quotient: Int64, remainder: Int64) {
            let q = a / b - (a % b < 0 ? 1 : 0)
            return (q, a - q * b)
        }
        let (seconds, millis) = floorDivide(milliseconds, 1000)
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let z = days + 719_468
        let era = floorDivide(z, 146_097).quotient
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        guard (0...9999).contains(year) else {
            out.number(year, width: 4); out.byte(UInt8(ascii: "-"))
            out.number(month, width: 2); out.byte(UInt8(ascii: "-"))
            out.number(day, width: 2); out.byte(UInt8(ascii: "T"))
            out.number(secondOfDay / 3600, width: 2); out.byte(UInt8(ascii: ":"))
            out.number(secondOfDay / 60 % 60, width: 2); out.byte(UInt8(ascii: ":"))
            out.number(secondOfDay % 60, width: 2); out.byte(UInt8(ascii: "."))
            out.number(millis, width: 3); out.byte(UInt8(ascii: "Z"))
            return
        }
        // The common case: 24 bytes in place, one append.
        var text: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &text) { b in
            func put(_ value: Int64, _ width: Int, at offset: Int) {
                var v = value
                for i in stride(from: offset + width - 1, through: offset, by: -1) {
                    b[i] = UInt8(ascii: "0") + UInt8(v % 10)
                    v /= 10
                }
            }
            put(year, 4, at: 0); b[4] = UInt8(ascii: "-")
            put(month, 2, at: 5); b[7] = UInt8(ascii: "-")
            put(day, 2, at: 8); b[10] = UInt8(ascii: "T")
            put(secondOfDay / 3600, 2, at: 11); b[13] = UInt8(ascii: ":")
            put(secondOfDay / 60 % 60, 2, at: 14); b[16] = UInt8(ascii: ":")
            put(secondOfDay % 60, 2, at: 17); b[19] = UInt8(ascii: ".")
            put(millis, 3, at: 20); b[23] = UInt8(ascii: "Z")
            out.raw(UnsafeRawBufferPointer(b))
        }
    }
}
