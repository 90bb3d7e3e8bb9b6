import CSodium

/// Random secrets from a character set: each character is a random byte,
/// rejected when it is at or above the largest multiple of the set's size
/// that fits in a byte (so no character is likelier than another: no modulo
/// bias), and otherwise taken modulo the size.
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
        let k = characters.count
        // Every set is at most 256 characters: one byte draws one of them.
        let accepted = 256 - 256 % k
        let out = try SecureBytes(count: length)
        // Random bytes a block at a time, in guarded memory wiped on release:
        // one getrandom(2) per character (`randombytes_uniform`) was the cost.
        let block = try SecureBytes(count: blockSize)
        out.withUnsafeMutableBytes { out in
            block.withUnsafeMutableBytes { block in
                var next = block.count
                var i = 0
                while i < length {
                    if next == block.count {
                        randombytes_buf(block.baseAddress!, block.count)
                        next = 0
                    }
                    let byte = Int(block[next])
                    next += 1
                    if byte < accepted {
                        out[i] = characters[byte % k]
                        i += 1
                    }
                }
            }
        }
        return out
    }

    /// Random bytes drawn per getrandom(2): a default-length secret takes one draw.
    static let blockSize = 256
}
