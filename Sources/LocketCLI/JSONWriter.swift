import LocketCore
import LocketSupport

/// A small streaming JSON writer: locket's JSON is a handful of flat objects,
/// and dumping 100 k items must not build a document tree.
package struct JSONWriter {
    package private(set) var bytes: [UInt8] = []
    private var needsComma: [Bool] = [false]

    package init() {}

    var result: String { String(decoding: bytes, as: UTF8.self) }

    private mutating func separate() {
        if needsComma[needsComma.count - 1] { bytes.append(UInt8(ascii: ",")) }
        needsComma[needsComma.count - 1] = true
    }

    package mutating func beginObject() {
        beginValue()
        bytes.append(UInt8(ascii: "{"))
        needsComma.append(false)
    }

    package mutating func beginArray() {
        beginValue()
        bytes.append(UInt8(ascii: "["))
        needsComma.append(false)
    }

    package mutating func endArray() {
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "]"))
    }

    package mutating func endObject() {
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "}"))
    }

    package mutating func key(_ name: String) {
        separate()
        appendString(name)
        bytes.append(UInt8(ascii: ":"))
        pendingValueAfterKey = true
    }

    private var pendingValueAfterKey = false

    private mutating func beginValue() {
        if pendingValueAfterKey {
            pendingValueAfterKey = false
        } else {
            separate()
        }
    }

    package mutating func string(_ s: String) { beginValue(); appendString(s) }
    /// Bytes known to be valid UTF-8.
    mutating func string(utf8: [UInt8]) { beginValue(); utf8.withUnsafeBytes { appendString($0) } }
    /// Bytes known to be valid UTF-8, straight from guarded memory (no copy to wipe).
    mutating func string(utf8 raw: UnsafeRawBufferPointer) { beginValue(); appendString(raw) }
    /// A string value holding `raw` in base64, encoded in place.
    mutating func base64(_ raw: [UInt8]) { raw.withUnsafeBytes { base64(raw: $0) } }

    /// A string value holding `raw` (guarded memory: a decrypted plaintext)
    /// in base64, encoded straight into the output (no copy to wipe).
    mutating func base64(raw: UnsafeRawBufferPointer) {
        beginValue()
        bytes.append(UInt8(ascii: "\""))
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: Base64.encodedCount(raw.count)))
        bytes.withUnsafeMutableBytes { _ = Base64.encode(raw, into: UnsafeMutableRawBufferPointer(rebasing: $0[start...])) }
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func reserve(_ additional: Int) { bytes.reserveCapacity(bytes.count + additional) }

    package mutating func int(_ v: Int64) { beginValue(); bytes.append(contentsOf: String(v).utf8) }
    mutating func uint(_ v: UInt64) { beginValue(); bytes.append(contentsOf: String(v).utf8) }
    package mutating func null() { beginValue(); bytes.append(contentsOf: "null".utf8) }
    package mutating func bool(_ v: Bool) { beginValue(); bytes.append(contentsOf: (v ? "true" : "false").utf8) }

    private mutating func appendString(_ s: String) {
        var s = s
        s.withUTF8 { appendString(UnsafeRawBufferPointer($0)) }
    }

    /// `s` (valid UTF-8) as a JSON string. Beyond what JSON requires (quote,
    /// backslash, C0), DEL and the characters `Printable.isUnsafe` names (C1
    /// controls, U+2028/U+2029, bidirectional marks and overrides) are
    /// written as `\uXXXX` too: a parser reads the same string, and JSON
    /// shown on a terminal (`--json`, errors on stderr) can't drive it.
    private mutating func appendString(_ s: UnsafeRawBufferPointer) {
        bytes.append(UInt8(ascii: "\""))
        func unicodeEscape(_ v: UInt32) {
            for c in "\\u".utf8 { bytes.append(c) }
            for shift in stride(from: 12, through: 0, by: -4) { bytes.append(Hex.digit(UInt8(v >> UInt32(shift) & 0xf))) }
        }
        let count = s.count
        var i = 0
        var plain = 0  // start of the current run of bytes copied as they are
        while i < count {
            let b = s[i]
            // Printable ASCII and the lead bytes that never start an unsafe
            // character: the common case, copied in runs.
            if b >= 0x20 && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\") && b != 0x7f && b != 0xc2 && b != 0xd8 && b != 0xe2 {
                i += 1
                continue
            }
            // Only these lead bytes start an unsafe character: U+0080-U+00BF,
            // U+0600-U+063F, U+2000-U+2FFF (the text is valid UTF-8).
            var v = UInt32(b), length = 1
            if b == 0xc2 || b == 0xd8 {
                guard i + 1 < count else { i += 1; continue }
                v = UInt32(b & 0x1f) << 6 | UInt32(s[i + 1] & 0x3f)
                length = 2
            } else if b == 0xe2 {
                guard i + 2 < count else { i += 1; continue }
                v = UInt32(b & 0x0f) << 12 | UInt32(s[i + 1] & 0x3f) << 6 | UInt32(s[i + 2] & 0x3f)
                length = 3
            }
            if length > 1 && !Printable.isUnsafe(v) {
                i += length
                continue
            }
            if plain < i { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: s[plain..<i])) }
            switch b {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(92); bytes.append(b)
            case 0x0a: bytes.append(92); bytes.append(UInt8(ascii: "n"))
            case 0x0d: bytes.append(92); bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(92); bytes.append(UInt8(ascii: "t"))
            default: unicodeEscape(v)
            }
            i += length
            plain = i
        }
        if plain < count { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: s[plain..<count])) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Lets a caller reuse the writer's storage for the next object.
    mutating func reset() {
        // The previous object may have held a secret.
        LocketSupport.wipe(&bytes)
        bytes.removeAll(keepingCapacity: true)
        needsComma = [false]
        pendingValueAfterKey = false
    }
}
