import LocketCore
import CSodium
import LocketSupport

/// What a device signs with and what everyone checks (docs/REMOTE.md "What
/// each key proves"): Ed25519 from libsodium, one key pair per device made
/// at enrolment from a seed kept in its device state, never in the
/// database. A signature proves that the device holding the seed made the
/// statement; the server and a revoked device, which know the keychain
/// password, hold no approved device's seed.
enum DeviceSigning {
    static let seedBytes = Int(crypto_sign_SEEDBYTES)
    static let publicKeyBytes = Int(crypto_sign_PUBLICKEYBYTES)
    static let signatureBytes = Int(crypto_sign_BYTES)

    /// The public key of `seed`.
    static func publicKey(seed: SecureBytes) throws -> [UInt8] {
        var publicKey = [UInt8](repeating: 0, count: publicKeyBytes)
        let secretKey = try SecureBytes(count: Int(crypto_sign_SECRETKEYBYTES))
        let rc = secretKey.withUnsafeMutableBytes { sk in
            seed.withUnsafeBytes { s in
                crypto_sign_seed_keypair(&publicKey, sk.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                         s.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        try Sodium.check(rc, "a signing key could not be made")
        return publicKey
    }

    /// A detached signature of `message` (its domain is the caller's: every
    /// message begins with its own label).
    static func sign(_ message: [UInt8], seed: SecureBytes) throws -> [UInt8] {
        var publicKey = [UInt8](repeating: 0, count: publicKeyBytes)
        let secretKey = try SecureBytes(count: Int(crypto_sign_SECRETKEYBYTES))
        var signature = [UInt8](repeating: 0, count: signatureBytes)
        let rc = secretKey.withUnsafeMutableBytes { sk -> Int32 in
            let skp = sk.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let made = seed.withUnsafeBytes { crypto_sign_seed_keypair(&publicKey, skp, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
            guard made == 0 else { return made }
            return crypto_sign_detached(&signature, nil, message, UInt64(message.count), skp)
        }
        try Sodium.check(rc, "a statement could not be signed")
        return signature
    }

    /// Whether `signature` is `publicKey`'s over `message`.
    static func verify(_ signature: [UInt8], _ message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == signatureBytes, publicKey.count == publicKeyBytes else { return false }
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }

    /// BLAKE2b-256 of `parts`, each length-prefixed (so no two lists hash alike).
    static func hash(_ label: String, _ parts: [[UInt8]]) -> [UInt8] {
        var message = Array(label.utf8)
        for part in parts {
            BigEndian.append(UInt32(part.count), to: &message)
            message += part
        }
        var out = [UInt8](repeating: 0, count: 32)
        _ = crypto_generichash(&out, 32, message, UInt64(message.count), nil, 0)
        return out
    }
}
