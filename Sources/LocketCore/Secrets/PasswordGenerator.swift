import CSodium

/// Random secrets from a character set: each character is drawn with
/// libsodium's `randombytes_uniform`, which rejects the values that would
/// make some characters likelier than others (no modulo bias).
public enum PasswordGenerator {
    /// The character sets `generate --charset` names.
    public enum Charset: String, CaseIterable, Sendable {
        /// A-Z, a-z, 0-9 (62 characters).
        case alnum
        /// alnum and the 32 ASCII punctuation characters (94).
        case symbols
        /// 0-9, a-f (16).
        case hex
        /// A-Z, a-z, 0-9, `-` and `_`, RFC 4648's URL-safe alphabet (64).
        case base64url
        /// 0-9 (10).
        case digits

        /// The characters, in ASCII order within each group.
        public var characters: [UInt8] {
            let upper = Array(UInt8(ascii: "A")...UInt8(ascii: "Z"))
            let lower = Array(UInt8(ascii: "a")...UInt8(ascii: "z"))
            let digits = Array(UInt8(ascii: "0")...UInt8(ascii: "9"))
            switch self {
            case .alnum: return upper + lower + digits
            case .symbols: return upper + lower + digits + Array("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~".utf8)
            case .hex: return digits + Array(UInt8(ascii: "a")...UInt8(ascii: "f"))
            case .base64url: return upper + lower + digits + [UInt8(ascii: "-"), UInt8(ascii: "_")]
            case .digits: return digits
            }
        }
    }

    /// The lengths accepted: shorter is too weak to be worth storing, longer
    /// is no password any program expects.
    public static let lengths = 8...1024

    /// The default length: 32 characters of alnum are about 190 bits.
    public static let defaultLength = 32

    /// A secret of `length` characters from `charset`, in guarded memory;
    /// errSecParam when the length is outside `lengths`.
    public static func generate(length: Int, charset: Charset) throws -> SecureBytes {
        guard lengths.contains(length) else {
            throw KeychainError(.param, "a generated secret is \(lengths.lowerBound) to \(lengths.upperBound) characters long, not \(length)")
        }
        try Sodium.ready()
        let characters = charset.characters
        let out = try SecureBytes(count: length)
        out.withUnsafeMutableBytes { out in
            for i in 0..<length { out[i] = characters[Int(randombytes_uniform(UInt32(characters.count)))] }
        }
        return out
    }
}
