/// `%XX` escapes (RFC 3986). Decoding has two rules, and each caller picks
/// its own by name:
/// - `decodeStrict`: a `%` not followed by two hexadecimal digits makes the
///   whole text malformed (nil). For text locket defines: item references
///   (`SERVICE/ACCOUNT`, SPEC §6), docker's server URLs.
/// - `decodeLenient`: such a `%` is kept as written, as git's own URL decoder
///   does. For text other programs wrote: git credential's `url=` field, the
///   user part of a login URL in an import.
public enum PercentEncoding {
    /// nil when a `%` is not followed by two hexadecimal digits.
    @inlinable
    public static func decodeStrict<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [UInt8]? {
        decode(Array(bytes), strict: true)
    }

    /// A `%` not followed by two hexadecimal digits is kept as it is.
    @inlinable
    public static func decodeLenient<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        decode(Array(bytes), strict: false)!
    }

    @usableFromInline
    static func decode(_ b: [UInt8], strict: Bool) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(b.count)
        var i = 0
        while i < b.count {
            if b[i] == UInt8(ascii: "%") {
                if i + 2 < b.count, let hi = hexDigit(b[i + 1]), let lo = hexDigit(b[i + 2]) {
                    out.append(UInt8(hi << 4 | lo))
                    i += 3
                    continue
                }
                if strict { return nil }
            }
            out.append(b[i])
            i += 1
        }
        return out
    }

    /// Escapes everything but unreserved characters (RFC 3986), with uppercase digits.
    public static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        for b in bytes {
            let unreserved = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)
                || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "~")
            if unreserved {
                out.append(b)
            } else {
                out += [UInt8(ascii: "%"), Hex.digit(b >> 4, uppercase: true), Hex.digit(b & 0xf, uppercase: true)]
            }
        }
        return out
    }
}
