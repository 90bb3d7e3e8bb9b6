import CSodium

/// How much work Argon2id does per password guess: libsodium's named limits.
/// The caller chooses (the command line offers interactive, moderate and
/// sensitive); the engine stores it in the keychain's header.
public struct KDFCost: Equatable, Sendable {
    /// Passes over memory.
    public var opsLimit: UInt64
    /// Memory in bytes.
    public var memLimit: UInt64

    public init(opsLimit: UInt64, memLimit: UInt64) {
        self.opsLimit = opsLimit
        self.memLimit = memLimit
    }

    /// libsodium's INTERACTIVE limits (64 MiB; about 0.2 s here): locket's floor.
    public static let interactive = KDFCost(opsLimit: UInt64(crypto_pwhash_OPSLIMIT_INTERACTIVE),
                                            memLimit: UInt64(crypto_pwhash_MEMLIMIT_INTERACTIVE))
    /// libsodium's MODERATE limits (256 MiB; about 1 s here): the default.
    public static let moderate = KDFCost(opsLimit: UInt64(crypto_pwhash_OPSLIMIT_MODERATE),
                                         memLimit: UInt64(crypto_pwhash_MEMLIMIT_MODERATE))
    /// libsodium's SENSITIVE limits (1 GiB; several seconds).
    public static let sensitive = KDFCost(opsLimit: UInt64(crypto_pwhash_OPSLIMIT_SENSITIVE),
                                          memLimit: UInt64(crypto_pwhash_MEMLIMIT_SENSITIVE))
    /// libsodium's minimum limits (a fraction of a millisecond), for test suites
    /// that make keychains through the engine: nothing in the command line
    /// passes it, and a keychain made with it opens only where its header
    /// authenticates (the device that made it).
    public static let weakForTests = KDFCost(opsLimit: UInt64(crypto_pwhash_OPSLIMIT_MIN),
                                             memLimit: UInt64(crypto_pwhash_MEMLIMIT_MIN))

    /// Whether this is at least INTERACTIVE in both limits. Lower limits in
    /// a header that cannot be authenticated mean the file was edited.
    public var isStrong: Bool {
        opsLimit >= KDFCost.interactive.opsLimit && memLimit >= KDFCost.interactive.memLimit
    }

    /// The larger of each limit: what a password change keeps when the caller
    /// names no cost but demands at least `floor`.
    public func atLeast(_ floor: KDFCost) -> KDFCost {
        KDFCost(opsLimit: max(opsLimit, floor.opsLimit), memLimit: max(memLimit, floor.memLimit))
    }
}

/// Argon2id (`crypto_pwhash`) parameters, stored per keychain.
public struct KDFParameters: Equatable, Sendable {
    /// Passes over memory.
    public var opsLimit: UInt64
    /// Memory in bytes.
    public var memLimit: UInt64
    /// 16 random bytes.
    public var salt: [UInt8]

    /// `cost` with a fresh random salt.
    init(cost: KDFCost) {
        self.init(opsLimit: cost.opsLimit, memLimit: cost.memLimit, salt: Sodium.random(Int(crypto_pwhash_SALTBYTES)))
    }

    init(opsLimit: UInt64, memLimit: UInt64, salt: [UInt8]) {
        self.opsLimit = opsLimit
        self.memLimit = memLimit
        self.salt = salt
    }

    /// The limits without the salt.
    public var cost: KDFCost { KDFCost(opsLimit: opsLimit, memLimit: memLimit) }

    /// Whether these are at least libsodium's INTERACTIVE limits.
    public var isStrong: Bool { cost.isStrong }

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
        let out = try SecureBytes(count: 32)
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
        // Argon2id's only failure with valid parameters: its memory could not be had.
        if rc != 0 { throw KeychainError(.allocate, "not enough memory for the password hash (Argon2id needs \(p.memLimit >> 20) MiB)") }
        return out
    }
}
