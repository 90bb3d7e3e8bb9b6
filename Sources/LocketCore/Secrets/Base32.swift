/// RFC 4648 base32, as otpauth:// URIs carry their secrets: the alphabet is
/// read in either case, spaces (as apps show secrets in groups of four) are
/// skipped, and `=` padding may be there or not, but only at the end.
enum Base32 {
    /// The value of one base32 character, or nil.
    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a")
        case UInt8(ascii: "2")...UInt8(ascii: "7"): c - UInt8(ascii: "2") + 26
        default: nil
        }
    }

    /// Why a text is not base32; carries no part of the text, which is a secret.
    struct Invalid: Error {
        let reason: String
    }

    /// Decodes into guarded memory. Fails on a character outside the
    /// alphabet, on padding before the end, and on a length no encoder makes
    /// (1, 3 or 6 characters past a multiple of 8).
    static func decode(_ text: UnsafeRawBufferPointer) throws -> SecureBytes {
        var characters = 0
        var padding = 0
        for c in text {
            if c == 0x20 { continue }
            if c == UInt8(ascii: "=") { padding += 1; continue }
            guard padding == 0 else { throw Invalid(reason: "padding (=) in the middle") }
            guard value(c) != nil else { throw Invalid(reason: "a character outside A-Z and 2-7") }
            characters += 1
        }
        guard [0, 2, 4, 5, 7].contains(characters % 8) else { throw Invalid(reason: "a length no base32 encoder makes") }
        if padding > 0, (characters + padding) % 8 != 0 { throw Invalid(reason: "the wrong amount of padding") }
        let out = try SecureBytes(count: characters * 5 / 8)
        out.withUnsafeMutableBytes { out in
            var buffer: UInt64 = 0
            var bits = 0
            var n = 0
            for c in text {
                guard let v = value(c) else { continue }
                buffer = buffer << 5 | UInt64(v)
                bits += 5
                if bits >= 8 {
                    bits -= 8
                    out[n] = UInt8(truncatingIfNeeded: buffer >> UInt64(bits))
                    n += 1
                }
            }
            buffer = 0
        }
        return out
    }
}
