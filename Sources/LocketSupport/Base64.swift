/// RFC 4648 base64 (the standard alphabet), the one encoder: JSON output,
/// `inject`'s base64 filter, PEM, OpenSSH keys and fingerprints. Decoding,
/// which may produce secrets, is LocketCore's (into guarded memory).
public enum Base64 {
    /// The character for a 6-bit value.
    @inlinable
    static func character(_ v: UInt32) -> UInt8 {
        switch v {
        case 0..<26: UInt8(truncatingIfNeeded: v) + UInt8(ascii: "A")
        case 26..<52: UInt8(truncatingIfNeeded: v - 26) + UInt8(ascii: "a")
        case 52..<62: UInt8(truncatingIfNeeded: v - 52) + UInt8(ascii: "0")
        case 62: UInt8(ascii: "+")
        default: UInt8(ascii: "/")
        }
    }

    /// `bytes` as text, with `=` padding unless `padding` is false (OpenSSH's fingerprints).
    @inlinable
    public static func encode<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, padding: Bool = true) -> String where Bytes.Index == Int {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        encode(bytes, padding: padding) { out.append($0) }
        return String(decoding: out, as: UTF8.self)
    }

    /// `bytes` as text, in raw memory.
    public static func encode(_ bytes: UnsafeRawBufferPointer, padding: Bool = true) -> String {
        encode(UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count), padding: padding)
    }

    /// `bytes` encoded, each character handed to `emit` (no intermediate copy).
    @inlinable
    public static func encode<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, padding: Bool = true, _ emit: (UInt8) -> Void) where Bytes.Index == Int {
        let start = bytes.startIndex
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[start + i]) << 16 | UInt32(bytes[start + i + 1]) << 8 | UInt32(bytes[start + i + 2])
            emit(character(n >> 18 & 63)); emit(character(n >> 12 & 63))
            emit(character(n >> 6 & 63)); emit(character(n & 63))
            i += 3
        }
        let rest = bytes.count - i
        if rest > 0 {
            let n = UInt32(bytes[start + i]) << 16 | (rest == 2 ? UInt32(bytes[start + i + 1]) << 8 : 0)
            emit(character(n >> 18 & 63))
            emit(character(n >> 12 & 63))
            if rest == 2 { emit(character(n >> 6 & 63)) } else if padding { emit(UInt8(ascii: "=")) }
            if padding { emit(UInt8(ascii: "=")) }
        }
    }
}
