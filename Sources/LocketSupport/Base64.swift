/// RFC 4648 base64 (the standard alphabet), the one encoder: JSON output,
/// `inject`'s base64 filter, PEM, OpenSSH keys and fingerprints. Decoding,
/// which may produce secrets, is LocketCore's (into guarded memory).
public enum Base64 {
    /// The characters by 6-bit value, read through a pointer: a lookup in
    /// constant memory, where a `switch` per character ran at ~150 MB/s.
    @inlinable
    static var alphabet: StaticString { "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/" }

    /// The number of characters `count` bytes encode to.
    @inlinable
    public static func encodedCount(_ count: Int, padding: Bool = true) -> Int {
        padding ? (count + 2) / 3 * 4 : (count * 4 + 2) / 3
    }

    /// `bytes` as text, with `=` padding unless `padding` is false (OpenSSH's fingerprints).
    @inlinable
    public static func encode<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, padding: Bool = true) -> String where Bytes.Index == Int {
        bytes.withContiguousStorageIfAvailable { encode(UnsafeRawBufferPointer($0), padding: padding) }
            ?? Array(bytes).withUnsafeBytes { encode($0, padding: padding) }
    }

    /// `bytes` as text, in raw memory.
    public static func encode(_ bytes: UnsafeRawBufferPointer, padding: Bool = true) -> String {
        let count = encodedCount(bytes.count, padding: padding)
        guard count > 0 else { return "" }
        return String(unsafeUninitializedCapacity: count) { encode(bytes, into: UnsafeMutableRawBufferPointer($0), padding: padding) }
    }

    /// `bytes` encoded into `out`, which holds at least `encodedCount` bytes
    /// (straight into guarded memory or an output buffer: no copy to wipe).
    /// Returns the number of bytes written.
    @discardableResult
    public static func encode(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, padding: Bool = true) -> Int {
        let total = encodedCount(bytes.count, padding: padding)
        precondition(out.count >= total, "base64 output buffer too small")
        guard let src = bytes.baseAddress, let dst = out.baseAddress else { return 0 }
        let table = alphabet.utf8Start
        let count = bytes.count
        var i = 0
        var o = 0
        while i + 3 <= count {
            let n = UInt32(src.load(fromByteOffset: i, as: UInt8.self)) << 16
                | UInt32(src.load(fromByteOffset: i + 1, as: UInt8.self)) << 8
                | UInt32(src.load(fromByteOffset: i + 2, as: UInt8.self))
            dst.storeBytes(of: table[Int(n >> 18)], toByteOffset: o, as: UInt8.self)
            dst.storeBytes(of: table[Int(n >> 12 & 63)], toByteOffset: o + 1, as: UInt8.self)
            dst.storeBytes(of: table[Int(n >> 6 & 63)], toByteOffset: o + 2, as: UInt8.self)
            dst.storeBytes(of: table[Int(n & 63)], toByteOffset: o + 3, as: UInt8.self)
            i += 3
            o += 4
        }
        let rest = count - i
        if rest > 0 {
            let second = rest == 2 ? UInt32(src.load(fromByteOffset: i + 1, as: UInt8.self)) << 8 : 0
            let n = UInt32(src.load(fromByteOffset: i, as: UInt8.self)) << 16 | second
            dst.storeBytes(of: table[Int(n >> 18)], toByteOffset: o, as: UInt8.self)
            dst.storeBytes(of: table[Int(n >> 12 & 63)], toByteOffset: o + 1, as: UInt8.self)
            o += 2
            if rest == 2 {
                dst.storeBytes(of: table[Int(n >> 6 & 63)], toByteOffset: o, as: UInt8.self)
                o += 1
            }
            if padding {
                while o < total {
                    dst.storeBytes(of: UInt8(ascii: "="), toByteOffset: o, as: UInt8.self)
                    o += 1
                }
            }
        }
        return o
    }

    /// `bytes` encoded, each character handed to `emit` (no intermediate copy).
    @inlinable
    public static func encode<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, padding: Bool = true, _ emit: (UInt8) -> Void) where Bytes.Index == Int {
        let table = alphabet.utf8Start
        let start = bytes.startIndex
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[start + i]) << 16 | UInt32(bytes[start + i + 1]) << 8 | UInt32(bytes[start + i + 2])
            emit(table[Int(n >> 18)]); emit(table[Int(n >> 12 & 63)])
            emit(table[Int(n >> 6 & 63)]); emit(table[Int(n & 63)])
            i += 3
        }
        let rest = bytes.count - i
        if rest > 0 {
            let n = UInt32(bytes[start + i]) << 16 | (rest == 2 ? UInt32(bytes[start + i + 1]) << 8 : 0)
            emit(table[Int(n >> 18)])
            emit(table[Int(n >> 12 & 63)])
            if rest == 2 { emit(table[Int(n >> 6 & 63)]) } else if padding { emit(UInt8(ascii: "=")) }
            if padding { emit(UInt8(ascii: "=")) }
        }
    }
}
