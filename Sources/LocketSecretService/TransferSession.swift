import CCrypto
import LocketCore

/// A Secret Service session (OpenSession): how secrets cross the bus.
///
/// `plain`: as they are. `dh-ietf1024-sha256-aes128-cbc-pkcs7`: both sides
/// make a Diffie-Hellman key pair in the 1024-bit group of RFC 2409 (the
/// Second Oakley Group, generator 2) and exchange public keys as big-endian
/// bytes; the shared secret, left-padded with zeros to 128 bytes (a client
/// that drops its leading zeros, or sends a public key shorter than 128
/// bytes, is handled: both are numbers), goes through HKDF-SHA256 with an
/// empty salt and empty info to a 16-byte AES-128 key; each secret is
/// AES-128-CBC with PKCS#7 padding under a fresh random IV, sent as the
/// secret's parameters. This is what libsecret, gnome-keyring, secretstorage
/// and go's and rust's clients compute.
final class TransferSession {
    enum Algorithm: String {
        case plain
        case dh = "dh-ietf1024-sha256-aes128-cbc-pkcs7"
    }

    let algorithm: Algorithm
    /// Where the AES key is (nil for plain): a slot of `keys`.
    private let keys: SessionKeys?
    private let keySlot: Int
    /// Our public key, sent back to the client as OpenSession's output.
    let publicKey: [UInt8]

    /// A plain session.
    init() {
        algorithm = .plain
        keys = nil
        keySlot = -1
        publicKey = []
    }

    deinit {
        keys?.give(keySlot)
    }

    /// A DH session with a client whose public key is `peer`, its key in a slot of `keys`.
    init(peer: [UInt8], keys: SessionKeys) throws {
        algorithm = .dh
        guard !peer.isEmpty, peer.count <= 256 else { throw ArgumentError("the client's public key is not a 1024-bit number") }
        guard let group = TransferSession.group, let ctx = BN_CTX_secure_new() else { throw TransferError.crypto }
        defer { BN_CTX_free(ctx) }
        let p = group.prime
        guard let x = BN_secure_new(), let y = BN_new(), let theirs = BN_bin2bn(peer, Int32(peer.count), nil), let shared = BN_secure_new(),
              let limit = BN_new() else {
            throw TransferError.crypto
        }
        defer {
            BN_clear_free(x); BN_free(y); BN_free(theirs); BN_clear_free(shared); BN_free(limit)
        }
        // 1 < theirs < p - 1: 0, 1 and p - 1 would give a shared secret anyone can guess.
        guard BN_copy(limit, p) != nil, BN_sub_word(limit, 1) == 1,
              BN_cmp(theirs, BN_value_one()) > 0, BN_cmp(theirs, limit) < 0 else {
            throw ArgumentError("the client's public key is not a valid number in the group")
        }
        // A private exponent of 160 random bits: NIST's size for a 1024-bit
        // group (SP 800-57's FFC L = 1024, N = 160, parameter set FA of SP
        // 800-56A): Pollard's lambda on it costs 2^80, as the group's discrete
        // logarithm does, so neither is the weaker. The group is a safe prime
        // (RFC 2409: (p - 1) / 2 is prime), whose only small subgroup, {1,
        // p - 1}, is refused above. Both exponentiations (of the generator 2,
        // and of the client's key) cost in proportion to the exponent: 160
        // bits is 62 % of the 256 used before, the largest part of a lookup's
        // work in the provider (issue 41's profile). The generator's power
        // comes from a table (FixedBase); the client's key's, with
        // BN_FLG_CONSTTIME, by OpenSSL's fixed-window exponentiation, whose
        // steps and memory reads do not follow the exponent's bits.
        guard BN_priv_rand(x, TransferSession.exponentBits, -1, 0) == 1, BN_add_word(x, 2) == 1 else { throw TransferError.crypto }
        BN_set_flags(x, BN_FLG_CONSTTIME)
        let generated = group.fixedBase.map { $0.power(x, into: y, ctx) } ?? (BN_mod_exp_mont_word(y, 2, x, p, ctx, group.montgomery) == 1)
        guard generated, BN_mod_exp_mont(shared, theirs, x, p, ctx, group.montgomery) == 1 else {
            throw TransferError.crypto
        }
        publicKey = try TransferSession.padded(y)
        let secret = try SecureBytes(count: 128)
        try secret.withUnsafeMutableBytes { out in
            guard BN_bn2binpad(shared, out.baseAddress!.assumingMemoryBound(to: UInt8.self), 128) == 128 else { throw TransferError.crypto }
        }
        let derived = try TransferSession.hkdf(secret)
        guard let slot = keys.take() else { throw Limits.exceeded("no room for another session's key") }
        self.keys = keys
        keySlot = slot
        keys.withKey(slot) { key in derived.withUnsafeBytes { key.copyMemory(from: $0) } }
    }

    /// The session's AES key (a DH session's only).
    private func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try keys!.withKey(keySlot) { try body(UnsafeRawBufferPointer($0)) }
    }

    /// The private exponent's size in bits.
    static let exponentBits: Int32 = 160

    /// The RFC 2409 group's prime and its Montgomery form, made once for
    /// every session (made per exponentiation, it cost a tenth of each).
    /// Read only once made, as OpenSSL lets a BN_MONT_CTX be shared.
    private struct Group: @unchecked Sendable {
        let prime: OpaquePointer
        let montgomery: OpaquePointer
        /// The generator's powers; nil (square-and-multiply then) if the table failed its self-test.
        let fixedBase: FixedBase?
    }

    private static let group: Group? = {
        guard let prime = BN_get_rfc2409_prime_1024(nil), let montgomery = BN_MONT_CTX_new(), let ctx = BN_CTX_new() else { return nil }
        defer { BN_CTX_free(ctx) }
        guard BN_MONT_CTX_set(montgomery, prime, ctx) == 1 else { return nil }
        return Group(prime: prime, montgomery: montgomery, fixedBase: FixedBase(prime: prime, montgomery: montgomery))
    }()

    /// A number as the 128 big-endian bytes of the group.
    private static func padded(_ n: OpaquePointer) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 128)
        guard BN_bn2binpad(n, &out, 128) == 128 else { throw TransferError.crypto }
        return out
    }

    /// HKDF-SHA256 (RFC 5869) with an empty salt and info, 16 bytes out:
    /// PRK = HMAC(zeros, secret); key = HMAC(PRK, 0x01)[0..<16].
    private static func hkdf(_ secret: SecureBytes) throws -> SecureBytes {
        let salt = [UInt8](repeating: 0, count: 32)
        let prk = try SecureBytes(count: 32)
        let block = try SecureBytes(count: 32)
        var length: UInt32 = 0
        try secret.withUnsafeBytes { s in
            try prk.withUnsafeMutableBytes { p in
                guard HMAC(EVP_sha256(), salt, 32, s.baseAddress!.assumingMemoryBound(to: UInt8.self), s.count,
                           p.baseAddress!.assumingMemoryBound(to: UInt8.self), &length) != nil else { throw TransferError.crypto }
            }
        }
        var one: UInt8 = 1
        try prk.withUnsafeBytes { p in
            try block.withUnsafeMutableBytes { b in
                guard HMAC(EVP_sha256(), p.baseAddress!, 32, &one, 1, b.baseAddress!.assumingMemoryBound(to: UInt8.self), &length) != nil else {
                    throw TransferError.crypto
                }
            }
        }
        return try block.prefix(16)
    }

    /// A secret as it goes out: (parameters, value); a plain session's value
    /// is empty here (the caller writes the secret itself, with no copy).
    func encode(_ secret: SecureBytes) throws -> (parameters: [UInt8], value: [UInt8]) {
        guard algorithm == .dh else { return ([], []) }
        var iv = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&iv, 16) == 1 else { throw TransferError.crypto }
        return (iv, try crypt(secret: secret, iv: iv))
    }

    /// A secret as it came in, decrypted; errors are the client's (a wrong
    /// IV size, a bad padding: the key is not the one agreed).
    func decode(parameters: [UInt8], value: [UInt8]) throws -> SecureBytes {
        guard algorithm == .dh else {
            guard parameters.isEmpty else { throw ArgumentError("a plain session's secret has no parameters") }
            return try SecureBytes(copying: value)
        }
        guard parameters.count == 16 else { throw ArgumentError("the secret's parameters are not a 16-byte IV") }
        guard !value.isEmpty, value.count % 16 == 0 else { throw ArgumentError("the encrypted secret is not whole AES blocks") }
        return try decrypt(value, iv: parameters)
    }

    private func crypt(secret: SecureBytes, iv: [UInt8]) throws -> [UInt8] {
        guard let ctx = EVP_CIPHER_CTX_new() else { throw TransferError.crypto }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var out = [UInt8](repeating: 0, count: secret.count + 16)
        var written: Int32 = 0, final: Int32 = 0
        try withKey { k in
            try secret.withUnsafeBytes { s in
                guard EVP_EncryptInit_ex(ctx, EVP_aes_128_cbc(), nil, k.baseAddress!.assumingMemoryBound(to: UInt8.self), iv) == 1 else {
                    throw TransferError.crypto
                }
                if s.count > 0 {
                    guard EVP_EncryptUpdate(ctx, &out, &written, s.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(s.count)) == 1 else {
                        throw TransferError.crypto
                    }
                }
                guard out.withUnsafeMutableBufferPointer({ EVP_EncryptFinal_ex(ctx, $0.baseAddress! + Int(written), &final) }) == 1 else {
                    throw TransferError.crypto
                }
            }
        }
        out.removeSubrange(Int(written + final)...)
        return out
    }

    private func decrypt(_ value: [UInt8], iv: [UInt8]) throws -> SecureBytes {
        guard let ctx = EVP_CIPHER_CTX_new() else { throw TransferError.crypto }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let out = try SecureBytes(count: value.count + 16)
        var written: Int32 = 0, final: Int32 = 0
        try withKey { k in
            try out.withUnsafeMutableBytes { o in
                let base = o.baseAddress!.assumingMemoryBound(to: UInt8.self)
                guard EVP_DecryptInit_ex(ctx, EVP_aes_128_cbc(), nil, k.baseAddress!.assumingMemoryBound(to: UInt8.self), iv) == 1,
                      EVP_DecryptUpdate(ctx, base, &written, value, Int32(value.count)) == 1 else { throw TransferError.crypto }
                guard EVP_DecryptFinal_ex(ctx, base + Int(written), &final) == 1 else {
                    throw ArgumentError("the secret did not decrypt with the session's key (bad padding)")
                }
            }
        }
        return try out.prefix(Int(written + final))
    }
}

/// libcrypto failed where it should not (memory): replied as org.freedesktop.DBus.Error.Failed.
enum TransferError: Error {
    case crypto
}
