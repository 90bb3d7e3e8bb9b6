import CCrypto

/// HMAC (RFC 2104) through libcrypto, for one-time codes: RFC 4226 names
/// HMAC-SHA-1, RFC 6238 adds SHA-256 and SHA-512. Nothing else in locket
/// calls libcrypto at start-up: the first use initializes it.
public enum HMACAlgorithm: String, Sendable, CaseIterable {
    case sha1 = "SHA1"
    case sha256 = "SHA256"
    case sha512 = "SHA512"

    /// Initialized once, on first use, without reading openssl.cnf: a
    /// user's OPENSSL_CONF must not change how a code is computed, and a
    /// static executable could not load the provider modules it names.
    private static let initialized: Bool = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_LOAD_CONFIG), nil) == 1

    /// The length of the MAC in bytes.
    public var length: Int {
        switch self {
        case .sha1: 20
        case .sha256: 32
        case .sha512: 64
        }
    }

    private func digest() -> OpaquePointer? {
        switch self {
        case .sha1: EVP_sha1()
        case .sha256: EVP_sha256()
        case .sha512: EVP_sha512()
        }
    }

    /// HMAC of `message` under `key`, in guarded memory. The corresponding C function is `HMAC`.
    public func authenticate(key: SecureBytes, message: [UInt8]) throws -> SecureBytes {
        guard HMACAlgorithm.initialized else { throw OpenSSL.failure(.io, "libcrypto could not be initialized") }
        guard key.count > 0 else { throw KeychainError(.param, "the HMAC key is empty") }
        guard key.count <= Int32.max else { throw KeychainError(.dataTooLarge, "the HMAC key is too long") }
        let md = try OpenSSL.check(digest(), .io, "libcrypto has no \(rawValue)")
        let out = try SecureBytes(count: Int(EVP_MAX_MD_SIZE))
        var written: UInt32 = 0
        try key.withUnsafeBytes { k in
            try out.withUnsafeMutableBytes { o in
                _ = try OpenSSL.check(HMAC(md, k.baseAddress!, Int32(k.count), message, message.count,
                                           o.baseAddress!.assumingMemoryBound(to: UInt8.self), &written),
                                      .io, "HMAC-\(rawValue) failed")
            }
        }
        guard Int(written) == length else { throw KeychainError(.io, "HMAC-\(rawValue) returned \(written) bytes") }
        return try out.prefix(length)
    }
}
