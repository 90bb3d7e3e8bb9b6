/// Big-endian (network order) integers, the one implementation the record
/// formats, session files, KDF parameters and meta rows share.
public enum BigEndian {
    /// `value`'s bytes, most significant first.
    @inlinable
    public static func bytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        var out = [UInt8]()
        append(value, to: &out)
        return out
    }

    /// Appends `value`'s bytes, most significant first.
    @inlinable
    public static func append<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        var shift = T.bitWidth - 8
        while shift >= 0 {
            out.append(UInt8(truncatingIfNeeded: value >> shift))
            shift -= 8
        }
    }

    /// `append` of the two widths every length prefix and counter uses
    /// (key-derivation contexts, the header's MAC, records): the same bytes,
    /// without the integer protocols that an unspecialized build (the test
    /// build, which opens keychains thousands of times) goes through per byte.
    @inlinable
    public static func append(_ value: UInt32, to out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: value >> 24))
        out.append(UInt8(truncatingIfNeeded: value >> 16))
        out.append(UInt8(truncatingIfNeeded: value >> 8))
        out.append(UInt8(truncatingIfNeeded: value))
    }

    /// `append` of a `UInt64` (see the `UInt32` one).
    @inlinable
    public static func append(_ value: UInt64, to out: inout [UInt8]) {
        append(UInt32(truncatingIfNeeded: value >> 32), to: &out)
        append(UInt32(truncatingIfNeeded: value), to: &out)
    }

    /// Writes `value`'s bytes at `offset` (which must leave room for them).
    @inlinable
    public static func store<T: FixedWidthInteger>(_ value: T, into out: UnsafeMutableRawBufferPointer, at offset: Int) {
        precondition(offset >= 0 && offset + T.bitWidth / 8 <= out.count, "big-endian store out of bounds")
        var shift = T.bitWidth - 8
        var i = offset
        while shift >= 0 {
            out[i] = UInt8(truncatingIfNeeded: value >> shift)
            shift -= 8
            i += 1
        }
    }

    /// The `T` in the `T.bitWidth / 8` bytes at `offset`; nil when they run past the end.
    @inlinable
    public static func read<T: FixedWidthInteger, Bytes: RandomAccessCollection<UInt8>>(_: T.Type, _ bytes: Bytes, at offset: Int) -> T?
    where Bytes.Index == Int {
        let size = T.bitWidth / 8
        guard offset >= bytes.startIndex, offset <= bytes.endIndex - size else { return nil }
        var value: T = 0
        for i in offset..<offset + size { value = value << 8 | T(truncatingIfNeeded: bytes[i]) }
        return value
    }

    /// The number the first (at most) 8 of `bytes` spell, most significant
    /// first: a shorter field is a smaller number, as meta rows were read.
    @inlinable
    public static func value<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt64 {
        var value: UInt64 = 0
        for b in bytes.prefix(8) { value = value << 8 | UInt64(b) }
        return value
    }

    /// `value(bytes)` as a signed number (meta rows hold Int64s).
    @inlinable
    public static func int64(_ bytes: [UInt8]) -> Int64 { Int64(bitPattern: value(bytes)) }
}
