import LocketSupport

/// The text macOS `security dump-keychain -d` prints, as Apple's SecurityTool
/// writes it (keychain_utilities.c, `print_keychain_item_attributes`), one
/// block per item:
///
/// ```
/// keychain: "/Users/me/Library/Keychains/login.keychain-db"
/// version: 512
/// class: "genp"
/// attributes:
///     0x00000007 <blob>="GitHub"
///     "acct"<blob>="alice"
///     "cdat"<timedate>=0x32303139303130313132303030305A00  "20190101120000Z\000"
///     "port"<uint32>=0x000001BB 
///     "svce"<blob>=<NULL>
/// data:
/// "s3cret"
/// ```
///
/// Every value is printed by `print_buffer`: bytes that are all printable
/// ASCII (other than backslash) as `"text"`; otherwise `0x` and upper-case
/// hex, then, if any byte was printable, two spaces and the quoted text with
/// each other byte as a backslash and three octal digits; an absent value as
/// `<NULL>`; an empty one as nothing. Integer attributes and the class are
/// printed as their four big-endian bytes the same way, and attribute tags
/// too (the label's tag is 7, so it reads `0x00000007 `). The hex form is
/// authoritative; the quoted text after it is ignored.
enum SecurityDump {
    static func read(_ input: SecureBytes, _ emit: (MigrationEntry) throws -> Void) throws {
        try input.withUnsafeBytes { r in
            var lines: [(start: Int, end: Int)] = []
            var i = r.starts(with: [0xef, 0xbb, 0xbf]) ? 3 : 0
            while i < r.count {
                var j = i
                while j < r.count, r[j] != 0x0a { j += 1 }
                var end = j
                if end > i, r[end - 1] == 0x0d { end -= 1 }
                lines.append((i, end))
                i = j + 1
            }
            func text(_ line: (start: Int, end: Int)) -> UnsafeRawBufferPointer {
                UnsafeRawBufferPointer(rebasing: r[line.start..<line.end])
            }
            guard let first = lines.first(where: { $0.end > $0.start }), text(first).starts(with: Array("keychain: ".utf8)) else {
                throw KeychainError(.decode, "not the output of security dump-keychain: it does not start with a 'keychain:' line")
            }
            var block: Block?
            var number = 0
            var expecting = Expecting.nothing
            for line in lines {
                let t = text(line)
                if expecting == .data {
                    let data = try PrintBuffer.secure(t)
                    block?.data = data
                    block?.dataMalformed = data == nil
                    expecting = .nothing
                    continue
                }
                if expecting == .skipLine { expecting = .nothing; continue }
                if t.starts(with: Array("keychain: ".utf8)) {
                    if let done = block { try emit(done.entry()) }
                    number += 1
                    block = Block(number: number)
                    expecting = .nothing
                } else if t.starts(with: Array("class: ".utf8)) {
                    block?.itemClass = PrintBuffer.bytes(UnsafeRawBufferPointer(rebasing: t[7...])) ?? []
                } else if t.elementsEqual(Array("attributes:".utf8)) {
                    expecting = .attributes
                } else if t.elementsEqual(Array("data:".utf8)) {
                    expecting = .data
                } else if t.elementsEqual(Array("raw data:".utf8)) {
                    expecting = .skipLine
                } else if expecting == .attributes, t.starts(with: Array("    ".utf8)) {
                    if !block!.attribute(UnsafeRawBufferPointer(rebasing: t[4...])) { block?.malformedLine = true }
                } else {
                    // version:, access lists (-a), anything newer: not needed for an item.
                    if expecting == .attributes { expecting = .nothing }
                }
            }
            if let done = block { try emit(done.entry()) }
        }
    }

    private enum Expecting { case nothing, attributes, data, skipLine }

    private static let attributeTags: [UInt32: Attribute] = [
        fourCC("acct"): .account, fourCC("svce"): .service, 7: .label, fourCC("labl"): .label, fourCC("desc"): .description,
        fourCC("icmt"): .comment, fourCC("gena"): .generic, fourCC("crtr"): .creator, fourCC("type"): .type,
        fourCC("srvr"): .server, fourCC("sdmn"): .securityDomain, fourCC("ptcl"): .protocol, fourCC("atyp"): .authenticationType,
        fourCC("port"): .port, fourCC("path"): .path,
    ]

    private static let otherClasses: [UInt32: String] = [
        0x8000_1000: "a certificate", 0x0000_000f: "a public key", 0x0000_0010: "a private key", 0x0000_0011: "a symmetric key",
        fourCC("ashp"): "an AppleShare password", 0x8000_1001: "a certificate revocation list",
    ]

    static func fourCC(_ s: String) -> UInt32 { BackupRecordCoding.fourCC(s) }

    private struct Block {
        let number: Int
        var itemClass: [UInt8] = []
        var values: [UInt32: [UInt8]] = [:]
        var data: SecureBytes?
        var dataMalformed = false
        var malformedLine = false

        init(number: Int) { self.number = number }

        /// Reads `TAG<type>=VALUE`; false when the line is not of that shape.
        mutating func attribute(_ t: UnsafeRawBufferPointer) -> Bool {
            // The tag's print_buffer form ends where `<type>=` starts.
            var lt = 0
            while lt < t.count {
                if t[lt] == UInt8(ascii: "<"), let gt = t[lt...].firstIndex(of: UInt8(ascii: ">")), gt + 1 < t.count, t[gt + 1] == UInt8(ascii: "=") {
                    break
                }
                lt += 1
            }
            guard lt < t.count, let tag = PrintBuffer.bytes(UnsafeRawBufferPointer(rebasing: t[0..<lt])), tag.count == 4 else { return false }
            let gt = t[lt...].firstIndex(of: UInt8(ascii: ">"))!
            let code = tag.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let valueText = UnsafeRawBufferPointer(rebasing: t[(gt + 2)...])
            if valueText.elementsEqual(Array("<NULL>".utf8)) { return true }
            guard let value = PrintBuffer.bytes(valueText) else { return false }
            values[code] = value
            return true
        }

        var label: String? {
            guard let bytes = values[7] ?? values[SecurityDump.fourCC("labl")], let s = String(validating: bytes, as: UTF8.self), !s.isEmpty else { return nil }
            return s
        }

        func entry() -> MigrationEntry {
            let origin = label.map { "item \(number) '\(Printable.clip($0, max: 40))'" } ?? "item \(number)"
            func skip(_ reason: String) -> MigrationEntry { .skipped(MigrationSkip(origin: origin, reason: reason)) }
            let classCode = itemClass.count == 4 ? itemClass.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } : 0
            let kind: ItemClass
            switch classCode {
            case SecurityDump.fourCC("genp"): kind = .genericPassword
            case SecurityDump.fourCC("inet"): kind = .internetPassword
            default:
                let name = SecurityDump.otherClasses[classCode]
                    ?? "an item of class '\(Printable.clip(String(decoding: itemClass, as: UTF8.self)))'"
                return skip("it is \(name), not a password")
            }
            guard !malformedLine else { return skip("an attribute line is malformed") }
            if let negative = values[SecurityDump.fourCC("nega")], negative.contains(where: { $0 != 0 }) {
                return skip("it is a 'never remember this password' entry, with no password")
            }
            guard !dataMalformed else { return skip("its data line is malformed") }
            guard let data else {
                return skip("it has no data: run security dump-keychain -d and allow access to every item")
            }
            var attributes: [Attribute: [UInt8]] = [:]
            for (tag, value) in values {
                guard let attribute = SecurityDump.attributeTags[tag], kind.supports(attribute) else { continue }
                switch attribute.kind {
                case .port:
                    guard value.count == 4 else { return skip("its port is not four bytes") }
                    let n = value.reduce(0) { $0 << 8 | Int($1) }
                    guard n <= 65535 else { return skip("its port \(n) is out of range") }
                    attributes[.port] = n == 0 ? [] : [UInt8(n >> 8), UInt8(n & 0xff)]
                case .fourCharCode:
                    attributes[attribute] = value.allSatisfy { $0 == 0 } ? [] : value
                case .string:
                    guard String(validating: value, as: UTF8.self) != nil else { return skip("its \(attribute.longName) is not valid UTF-8") }
                    attributes[attribute] = value
                default:
                    attributes[attribute] = value
                }
                guard value.count <= Attribute.maximumValueLength else { return skip("its \(attribute.longName) is too long") }
            }
            attributes = attributes.filter { !$0.value.isEmpty }
            var item = MigrationItem(itemClass: kind, attributes: attributes, data: data, origin: origin)
            item.creationDate = values[SecurityDump.fourCC("cdat")].flatMap(SecurityDump.time)
            item.modificationDate = values[SecurityDump.fourCC("mdat")].flatMap(SecurityDump.time)
            return .item(item)
        }
    }

    /// A `<timedate>` value: `YYYYMMDDhhmmssZ` and a NUL, as milliseconds since 1970.
    static func time(_ value: [UInt8]) -> Int64? {
        var digits = value
        if digits.last == 0 { digits.removeLast() }
        guard digits.count == 15, digits[14] == UInt8(ascii: "Z"), digits[0..<14].allSatisfy({ decimalDigit($0) != nil }) else { return nil }
        let d = digits[0..<14].map { Int($0 - 0x30) }
        let year = d[0] * 1000 + d[1] * 100 + d[2] * 10 + d[3]
        let month = d[4] * 10 + d[5], day = d[6] * 10 + d[7]
        let hour = d[8] * 10 + d[9], minute = d[10] * 10 + d[11], second = d[12] * 10 + d[13]
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        return (Int64(ISO8601.daysFromCivil(year, month, day)) * 86_400 + Int64(hour * 3600 + minute * 60 + second)) * 1000
    }
}

/// Reads values in SecurityTool's `print_buffer` form (see SecurityDump).
enum PrintBuffer {
    /// The bytes of a value, or nil when the text is not in that form.
    static func bytes(_ t: UnsafeRawBufferPointer) -> [UInt8]? {
        var out: [UInt8] = []
        return decode(t, { out.append($0) }) ? out : nil
    }

    /// A value decoded straight into guarded memory (the data line).
    static func secure(_ t: UnsafeRawBufferPointer) throws -> SecureBytes? {
        var n = 0
        guard decode(t, { _ in n += 1 }) else { return nil }
        let out = try SecureBytes(count: n)
        var k = 0
        out.withUnsafeMutableBytes { o in _ = decode(t) { o[k] = $0; k += 1 } }
        return out
    }

    private static func decode(_ t: UnsafeRawBufferPointer, _ put: (UInt8) -> Void) -> Bool {
        if t.isEmpty { return true }
        if t.count >= 2, t[0] == UInt8(ascii: "0"), t[1] == UInt8(ascii: "x") {
            var i = 2
            while i < t.count, hexDigit(t[i]) != nil { i += 1 }
            let hex = i - 2
            guard hex % 2 == 0, hex > 0 else { return false }
            // After the hex: nothing, a trailing space, or two spaces and the quoted text.
            guard i == t.count || t[i] == 0x20 else { return false }
            var k = 2
            while k < i { put(UInt8(hexDigit(t[k])! << 4 | hexDigit(t[k + 1])!)); k += 2 }
            return true
        }
        guard t.count >= 2, t[0] == UInt8(ascii: "\""), t[t.count - 1] == UInt8(ascii: "\"") else { return false }
        var i = 1
        let end = t.count - 1
        while i < end {
            if t[i] == UInt8(ascii: "\\") {
                guard i + 3 < end + 1, i + 3 <= end,
                      let a = octal(t[i + 1]), let b = octal(t[i + 2]), let c = octal(t[i + 3]), a <= 3 else { return false }
                put(a << 6 | b << 3 | c)
                i += 4
            } else {
                put(t[i])
                i += 1
            }
        }
        return true
    }

    private static func octal(_ b: UInt8) -> UInt8? { b >= 0x30 && b <= 0x37 ? b - 0x30 : nil }
}
