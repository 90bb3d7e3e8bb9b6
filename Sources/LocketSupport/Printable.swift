/// Text made safe to show on a terminal: the one escaper for item values in
/// text output, user text quoted in messages, prompts, and every line locket
/// writes to standard error.
///
/// A value from the keychain or the command line must never drive the
/// terminal nor disguise what it shows. Escaped, written as follows:
/// - newline, tab and carriage return as `\n`, `\t`, `\r`; a backslash as `\\`
///   (unless `backslashes` is false, for text that is locket's own);
/// - another C0 control or DEL as `\xHH`, and so is a byte that is not part
///   of valid UTF-8 (so `\x9b` is the byte 0x9b, never a character);
/// - another unsafe character (see `isUnsafe`) as `\u{H...}`: `\u{9b}`, `\u{202e}`.
/// Hex digits are lowercase. Everything else, any other valid UTF-8, is kept.
public enum Printable {
    /// Whether the character must not reach a terminal as itself: C0
    /// controls and DEL (cursor movement, bells, the start of escape
    /// sequences); C1 controls, U+0080-U+009F (terminals may take U+009B as
    /// CSI and U+009D as OSC); the line and paragraph separators U+2028 and
    /// U+2029; and the invisible marks and overrides that reorder how a line
    /// is displayed (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069,
    /// as in "Trojan Source", CVE-2021-42574).
    @inlinable
    public static func isUnsafe(_ scalar: UInt32) -> Bool {
        switch scalar {
        case 0..<0x20, 0x7f...0x9f, 0x061c, 0x200e, 0x200f, 0x2028...0x202e, 0x2066...0x2069: true
        default: false
        }
    }

    /// Appends `bytes`, escaped, to `out`.
    public static func escape(_ bytes: UnsafeRawBufferPointer, backslashes: Bool = true, into out: inout [UInt8]) {
        var i = 0
        var plain = 0  // start of the current run of bytes that print as themselves
        let count = bytes.count
        while i < count {
            let b = bytes[i]
            if b >= 0x20 && b < 0x7f && (b != backslash || !backslashes) {
                i += 1
                continue
            }
            if b < 0x80 {
                if plain < i { out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[plain..<i])) }
                switch b {
                case 0x0a: out.append(backslash); out.append(UInt8(ascii: "n"))
                case 0x09: out.append(backslash); out.append(UInt8(ascii: "t"))
                case 0x0d: out.append(backslash); out.append(UInt8(ascii: "r"))
                case backslash: out.append(backslash); out.append(backslash)
                default: appendByteEscape(b, into: &out)
                }
                i += 1
                plain = i
                continue
            }
            // A multi-byte sequence: kept when valid UTF-8 and safe; an unsafe
            // character as \u{...}; else its first byte as \xHH.
            if let (scalar, length) = decode(bytes, at: i) {
                if !isUnsafe(scalar) {
                    i += length
                    continue
                }
                if plain < i { out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[plain..<i])) }
                appendScalarEscape(scalar, into: &out)
                i += length
            } else {
                if plain < i { out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[plain..<i])) }
                appendByteEscape(b, into: &out)
                i += 1
            }
            plain = i
        }
        if plain < count { out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[plain..<count])) }
    }

    /// `text`, escaped.
    public static func escape(_ text: String, backslashes: Bool = true) -> String {
        var text = text
        return text.withUTF8 { utf8 in
            // The common case, nothing to escape, returns the text as it is.
            if !utf8.contains(where: { $0 < 0x20 || $0 >= 0x7f || ($0 == backslash && backslashes) }) { return String(decoding: utf8, as: UTF8.self) }
            var out: [UInt8] = []
            out.reserveCapacity(utf8.count + 16)
            escape(UnsafeRawBufferPointer(utf8), backslashes: backslashes, into: &out)
            return String(decoding: out, as: UTF8.self)
        }
    }

    /// User text to quote in a one-line message: its first `max` characters,
    /// escaped, and "..." when there were more.
    public static func clip(_ s: String, max: Int = 64) -> String {
        var prefix = String.UnicodeScalarView()
        prefix.append(contentsOf: s.unicodeScalars.prefix(max))
        let out = escape(String(prefix))
        return s.unicodeScalars.count > max ? out + "..." : out
    }

    @usableFromInline static let backslash = UInt8(ascii: "\\")

    private static func appendByteEscape(_ b: UInt8, into out: inout [UInt8]) {
        out.append(backslash); out.append(UInt8(ascii: "x"))
        out.append(Hex.digit(b >> 4)); out.append(Hex.digit(b & 0xf))
    }

    private static func appendScalarEscape(_ scalar: UInt32, into out: inout [UInt8]) {
        out.append(backslash); out.append(UInt8(ascii: "u")); out.append(UInt8(ascii: "{"))
        var shift = 20
        while shift > 0 && scalar >> UInt32(shift) == 0 { shift -= 4 }
        while shift >= 0 {
            out.append(Hex.digit(UInt8(scalar >> UInt32(shift) & 0xf)))
            shift -= 4
        }
        out.append(UInt8(ascii: "}"))
    }

    /// The character of the well-formed UTF-8 sequence (RFC 3629) whose
    /// length the byte at `i` announces, and that length; nil when the
    /// sequence is cut short or ill-formed (overlong, a surrogate, past U+10FFFF).
    private static func decode(_ bytes: UnsafeRawBufferPointer, at i: Int) -> (UInt32, Int)? {
        let b0 = bytes[i]
        let length = b0 >= 0xf0 ? 4 : b0 >= 0xe0 ? 3 : b0 >= 0xc0 ? 2 : 1
        guard length > 1, i + length <= bytes.count else { return nil }
        func continuation(_ k: Int, _ low: UInt8 = 0x80, _ high: UInt8 = 0xbf) -> UInt32? {
            let b = bytes[i + k]
            return b >= low && b <= high ? UInt32(b & 0x3f) : nil
        }
        switch length {
        case 2:
            guard b0 >= 0xc2, let c1 = continuation(1) else { return nil }
            return (UInt32(b0 & 0x1f) << 6 | c1, 2)
        case 3:
            let (low, high): (UInt8, UInt8) = b0 == 0xe0 ? (0xa0, 0xbf) : b0 == 0xed ? (0x80, 0x9f) : (0x80, 0xbf)
            guard let c1 = continuation(1, low, high), let c2 = continuation(2) else { return nil }
            return (UInt32(b0 & 0x0f) << 12 | c1 << 6 | c2, 3)
        default:
            guard b0 <= 0xf4 else { return nil }
            let (low, high): (UInt8, UInt8) = b0 == 0xf0 ? (0x90, 0xbf) : b0 == 0xf4 ? (0x80, 0x8f) : (0x80, 0xbf)
            guard let c1 = continuation(1, low, high), let c2 = continuation(2), let c3 = continuation(3) else { return nil }
            return (UInt32(b0 & 0x07) << 18 | c1 << 12 | c2 << 6 | c3, 4)
        }
    }
}
