/// A small streaming JSON writer: locket's JSON is a handful of flat objects,
/// and dumping 100 k items must not build a document tree.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    private var needsComma: [Bool] = [false]

    var result: String { String(decoding: bytes, as: UTF8.self) }

    private mutating func separate() {
        if needsComma[needsComma.count - 1] { bytes.append(UInt8(ascii: ",")) }
        needsComma[needsComma.count - 1] = true
    }

    mutating func beginObject() {
        beginValue()
        bytes.append(UInt8(ascii: "{"))
        needsComma.append(false)
    }

    mutating func beginArray() {
        beginValue()
        bytes.append(UInt8(ascii: "["))
        needsComma.append(false)
    }

    mutating func endArray() {
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "]"))
    }

    mutating func endObject() {
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "}"))
    }

    mutating func key(_ name: String) {
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

    mutating func string(_ s: String) { beginValue(); appendString(s) }
    /// Bytes known to be valid UTF-8.
    mutating func string(utf8: [UInt8]) { beginValue(); utf8.withUnsafeBytes { appendString($0) } }
    /// Bytes known to be valid UTF-8, straight from guarded memory (no copy to wipe).
    mutating func string(utf8 raw: UnsafeRawBufferPointer) { beginValue(); appendString(raw) }
    /// A string value holding `raw` in base64, encoded in place.
    mutating func base64(_ raw: [UInt8]) {
        beginValue()
        bytes.append(UInt8(ascii: "\""))
        Base64.encode(raw) { bytes.append($0) }
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func reserve(_ additional: Int) { bytes.reserveCapacity(bytes.count + additional) }

    mutating func int(_ v: Int64) { beginValue(); bytes.append(contentsOf: String(v).utf8) }
    mutating func uint(_ v: UInt64) { beginValue(); bytes.append(contentsOf: String(v).utf8) }
    mutating func null() { beginValue(); bytes.append(contentsOf: "null".utf8) }
    mutating func bool(_ v: Bool) { beginValue(); bytes.append(contentsOf: (v ? "true" : "false").utf8) }

    private mutating func appendString(_ s: String) {
        var s = s
        s.withUTF8 { appendString(UnsafeRawBufferPointer($0)) }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    private mutating func appendString(_ s: UnsafeRawBufferPointer) {
        bytes.append(UInt8(ascii: "\""))
        let hex = Self.hex
        for b in s {
            switch b {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(92); bytes.append(b)
            case 0x0a: bytes.append(92); bytes.append(UInt8(ascii: "n"))
            case 0x0d: bytes.append(92); bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(92); bytes.append(UInt8(ascii: "t"))
            case 0..<0x20, 0x7f:
                for c in "\\u00".utf8 { bytes.append(c) }
                bytes.append(hex[Int(b >> 4)]); bytes.append(hex[Int(b & 0xf)])
            default: bytes.append(b)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Lets a caller reuse the writer's storage for the next object.
    mutating func reset() {
        // The previous object may have held a secret.
        for i in bytes.indices { bytes[i] = 0 }
        bytes.removeAll(keepingCapacity: true)
        needsComma = [false]
        pendingValueAfterKey = false
    }
}
