import CSodium

/// Argon2id (`crypto_pwhash`) parameters, stored per keychain.
public struct KDFParameters: Equatable, Sendable {
    /// Passes over memory.
    public var opsLimit: UInt64
    /// Memory in bytes.
    public var memLimit: UInt64
    /// 16 random bytes.
    public var salt: [UInt8]

    /// libsodium's MODERATE limits: about 0.9 s and 256 MiB on the 2-core machines locket is built on.
    public static func standard() -> KDFParameters {
        KDFParameters(opsLimit: UInt64(crypto_pwhash_OPSLIMIT_MODERATE),
                      memLimit: UInt64(crypto_pwhash_MEMLIMIT_MODERATE),
                      salt: Sodium.random(Int(crypto_pwhash_SALTBYTES)))
    }

    /// libsodium's minimum limits, for test suites only (`LOCKET_TEST_WEAK_KDF=1`).
    public static func weakForTests() -> KDFParameters {
        KDFParameters(opsLimit: UInt64(crypto_pwhash_OPSLIMIT_MIN),
                      memLimit: UInt64(crypto_pwhash_MEMLIMIT_MIN),
                      salt: Sodium.random(Int(crypto_pwhash_SALTBYTES)))
    }

    /// Whether these are at least libsodium's INTERACTIVE limits. Lower ones
    /// in a keychain file mean it was tampered with (or made by a test suite).
    public var isStrong: Bool {
        opsLimit >= UInt64(crypto_pwhash_OPSLIMIT_INTERACTIVE) && memLimit >= UInt64(crypto_pwhash_MEMLIMIT_INTERACTIVE)
    }

    /// Whether libsodium accepts these at all; anything else is a damaged header.
    var isValid: Bool {
        salt.count == Int(crypto_pwhash_SALTBYTES)
            && opsLimit >= UInt64(crypto_pwhash_OPSLIMIT_MIN) && opsLimit <= 64
            && memLimit >= UInt64(crypto_pwhash_MEMLIMIT_MIN) && memLimit <= 4 << 30
    }
}

enum PasswordHash {
    /// The key-encryption key for `password`.
    static func deriveKEK(password: SecureBytes, parameters p: KDFParameters) throws -> SecureBytes {
        let out = SecureBytes(count: 32)
        let empty: [CChar] = [0]
        let rc: Int32 = out.withUnsafeMutableBytes { o in
            password.withUnsafeBytes { pw in
                p.salt.withUnsafeBytes { s in
                    empty.withUnsafeBufferPointer { e in
                    crypto_pwhash(o.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                                  pw.baseAddress?.assumingMemoryBound(to: CChar.self) ?? e.baseAddress!, UInt64(pw.count),
                                  s.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                  p.opsLimit, Int(p.memLimit), crypto_pwhash_ALG_ARGON2ID13)
                    }
                }
            }
        }
        if rc != 0 { throw KeychainError(.io, "not enough memory for the password hash") }
        return out
    }
}
