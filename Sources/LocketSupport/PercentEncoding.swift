/// `%XX` escapes (RFC 3986): the one decoder, for every caller. Decoding has
/// two rules for a malformed escape, and each caller picks its own by name:
/// - `decodeStrict`: a `%` not followed by two hexadecimal digits makes the
///   whole text malformed (nil). For text locket defines: item references
///   (`SERVICE/ACCOUNT`, SPEC §6), docker's server URLs, and the parameters
///   of an `otpauth://` URI.
/// - `decodeLenient`: such a `%` is kept as written, as git's own URL decoder
///   does. For text other programs wrote: git credential's `url=` field, the
///   user part of a login URL in an import.
/// `plusAsSpace` reads `+` as a space, as a form-encoded query does (the
/// `otpauth://` parameters); everywhere else `+` is itself.
public enum PercentEncoding {
    /// nil when a `%` is not followed by two hexadecimal digits.
    @inlinable
    public static func decodeStrict<Bytes: Collection<UInt8>>(_ bytes: Bytes, plusAsSpace: Bool = false) -> [UInt8]? {
        let input = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity(input.count)
        let valid = input.withUnsafeBytes { decode($0, strict: true, plusAsSpace: plusAsSpace) { out.append($0) } }
        return valid ? out : nil
    }

    /// A `%` not followed by two hexadecimal digits is kept as it is.
    @inlinable
    public static func decodeLenient<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        let input = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity(input.count)
        _ = input.withUnsafeBytes { decode($0, strict: false, plusAsSpace: false) { out.append($0) } }
        return out
    }

    /// `decodeStrict` into memory the caller chose (guarded memory, for a
    /// secret), which holds at least `input.count` bytes: the count written,
    /// nil when malformed. Nothing is copied anywhere else.
    public static func decodeStrict(_ input: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, plusAsSpace: Bool) -> Int? {
        precondition(out.count >= input.count)
        var n = 0
        guard decode(input, strict: true, plusAsSpace: plusAsSpace, { out[n] = $0; n += 1 }) else { return nil }
        return n
    }

    /// Hands each decoded byte to `emit`; false at a malformed escape when `strict`.
    @usableFromInline
    static func decode(_ b: UnsafeRawBufferPointer, strict: Bool, plusAsSpace: Bool, _ emit: (UInt8) -> Void) -> Bool {
        var i = 0
        while i < b.count {
            if b[i] == UInt8(ascii: "%") {
                if i + 2 < b.count, let hi = hexDigit(b[i + 1]), let lo = hexDigit(b[i + 2]) {
                    emit(UInt8(hi << 4 | lo))
                    i += 3
                    continue
                }
                if strict { return false }
            }
            emit(plusAsSpace && b[i] == UInt8(ascii: "+") ? 0x20 : b[i])
            i += 1
        }
        return true
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
