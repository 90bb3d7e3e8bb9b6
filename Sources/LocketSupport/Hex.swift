/// Hexadecimal, the one implementation: session and generation file names,
/// persistent refs, `%XX` escapes, JSON `\u` escapes, certificate fingerprints.
public enum Hex {
    /// The ASCII digit for a nibble (0...15): lowercase unless `uppercase`.
    @inlinable
    public static func digit(_ nibble: UInt8, uppercase: Bool = false) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : (uppercase ? UInt8(ascii: "A") : UInt8(ascii: "a")) + nibble - 10
    }

    /// Two digits per byte, lowercase unless `uppercase`.
    // Inlinable, like every generic here: unspecialized, its first call
    // resolves Sequence's associated types at run time (0.2 M instructions
    // of a `find`, which names its session file with it).
    @inlinable
    public static func encode<Bytes: Sequence<UInt8>>(_ bytes: Bytes, uppercase: Bool = false) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for b in bytes {
            out.append(digit(b >> 4, uppercase: uppercase))
            out.append(digit(b & 0xf, uppercase: uppercase))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of an even number of digits of either case; nil for an odd
    /// count or anything that is not a digit.
    @inlinable
    public static func decode<Text: StringProtocol>(_ text: Text) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = hexDigit(chars[i]), let lo = hexDigit(chars[i + 1]) else { return nil }
            out.append(UInt8(hi << 4 | lo))
            i += 2
        }
        return out
    }
}

/// The value of an ASCII hexadecimal digit, either case.
@inlinable
public func hexDigit(_ byte: UInt8) -> UInt32? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
    case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
    case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
    default: nil
    }
}
