// The public area of a TPM object (a marshalled TPM2B_PUBLIC, TPM 2.0 Part 2
// 12.2), read without a TPM: a Secure Enclave key's public key and
// attributes come from the key file alone, as Apple gives out the public
// key of a Secure Enclave key without the enclave. Only what locket makes is
// read (ECC P-256 keys, keyed-hash sealed objects); anything else, or bytes
// that don't parse, is errSecDecode.

/// The fields locket checks of a TPM object's public area.
public struct TPMPublicArea: Sendable, Equatable {
    /// TPMA_OBJECT bits.
    public struct Attributes: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let fixedTPM = Attributes(rawValue: 0x0000_0002)
        public static let fixedParent = Attributes(rawValue: 0x0000_0010)
        public static let sensitiveDataOrigin = Attributes(rawValue: 0x0000_0020)
        public static let userWithAuth = Attributes(rawValue: 0x0000_0040)
        public static let noDA = Attributes(rawValue: 0x0000_0400)
        public static let restricted = Attributes(rawValue: 0x0001_0000)
        public static let decrypt = Attributes(rawValue: 0x0002_0000)
        public static let sign = Attributes(rawValue: 0x0004_0000)
    }

    public enum ObjectType: Sendable, Equatable {
        /// An ECC key on NIST P-256, with its public point.
        case p256(x: [UInt8], y: [UInt8])
        /// A keyed-hash object (a sealed secret).
        case keyedHash
    }

    public let type: ObjectType
    public let attributes: Attributes
    /// The policy digest the object's authorization needs (empty: none).
    public let authPolicy: [UInt8]

    private static let algNull: UInt16 = 0x0010
    private static let algSHA256: UInt16 = 0x000b

    /// Parses a marshalled TPM2B_PUBLIC, all of it.
    public init(_ bytes: [UInt8]) throws {
        var reader = Reader(bytes: bytes)
        let size = Int(try reader.u16())
        guard size == bytes.count - 2 else { throw Self.malformed("its size field does not match its length") }
        let algorithm = try reader.u16()
        guard try reader.u16() == Self.algSHA256 else { throw Self.malformed("its name algorithm is not SHA-256") }
        attributes = Attributes(rawValue: try reader.u32())
        authPolicy = try reader.sized(limit: 64)
        switch algorithm {
        case 0x0023:  // TPM2_ALG_ECC
            let symmetric = try reader.u16()
            if symmetric != Self.algNull { _ = try reader.u16(); _ = try reader.u16() }
            let scheme = try reader.u16()
            // Null, ECDSA (0x18) or ECDH (0x19), each with one hash; other schemes carry more.
            guard scheme == Self.algNull || scheme == 0x0018 || scheme == 0x0019 else { throw Self.malformed("an ECC scheme locket does not use") }
            if scheme != Self.algNull { _ = try reader.u16() }
            guard try reader.u16() == 0x0003 else { throw KeychainError(.decode, "the TPM key is not on P-256") }  // TPM2_ECC_NIST_P256
            if try reader.u16() != Self.algNull { _ = try reader.u16() }  // the KDF and its hash
            let x = try reader.sized(limit: 32)
            let y = try reader.sized(limit: 32)
            guard x.count == 32, y.count == 32 else { throw Self.malformed("its point is not two 32-byte coordinates") }
            type = .p256(x: x, y: y)
        case 0x0008:  // TPM2_ALG_KEYEDHASH
            switch try reader.u16() {
            case Self.algNull: break
            case 0x0005: _ = try reader.u16()  // HMAC: its hash
            case 0x000a: _ = try reader.u16(); _ = try reader.u16()  // XOR: hash, KDF
            default: throw Self.malformed("a keyed-hash scheme that does not exist")
            }
            _ = try reader.sized(limit: 64)
            type = .keyedHash
        default:
            throw KeychainError(.decode, "the TPM object is neither a P-256 key nor a sealed secret")
        }
        guard reader.atEnd else { throw Self.malformed("bytes after its unique field") }
    }

    /// The P-256 public key as Apple's external representation, 04 || X || Y.
    public var p256Point: [UInt8]? {
        guard case .p256(let x, let y) = type else { return nil }
        return [0x04] + x + y
    }

    private static func malformed(_ why: String) -> KeychainError {
        KeychainError(.decode, "the TPM object's public area is malformed: \(why)")
    }

    /// Big-endian fields of a marshalled structure, each read checked.
    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        var atEnd: Bool { offset == bytes.count }

        mutating func u16() throws -> UInt16 {
            guard bytes.count - offset >= 2 else { throw TPMPublicArea.malformed("it is truncated") }
            defer { offset += 2 }
            return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
        }

        mutating func u32() throws -> UInt32 { UInt32(try u16()) << 16 | UInt32(try u16()) }

        /// A TPM2B's contents.
        mutating func sized(limit: Int) throws -> [UInt8] {
            let count = Int(try u16())
            guard count <= limit, bytes.count - offset >= count else { throw TPMPublicArea.malformed("a sized field is too long") }
            defer { offset += count }
            return Array(bytes[offset..<offset + count])
        }
    }
}
