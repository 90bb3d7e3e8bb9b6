import CSodium

/// libsodium's sealed boxes (`crypto_box_seal`) to X25519 keys: the one home
/// for `key encrypt|decrypt --algorithm x25519-sealed-box`, group keys wrapped
/// to a device, and item secrets sealed to a presence key.
package enum SealedBox {
    /// The ephemeral public key and the MAC a sealed box adds (48 bytes).
    package static var sealBytes: Int { Int(crypto_box_sealbytes()) }

    /// `plaintext` sealed to `publicKey`; errSecParam for a key that isn't one
    /// (the wrong size, or of small order, which libsodium refuses).
    package static func seal(_ plaintext: UnsafeRawBufferPointer, to publicKey: [UInt8]) throws -> [UInt8] {
        try Sodium.ready()
        guard publicKey.count == Int(crypto_box_publickeybytes()) else {
            throw KeychainError(.param, "an X25519 public key is \(crypto_box_publickeybytes()) bytes, not \(publicKey.count)")
        }
        var out = [UInt8](repeating: 0, count: plaintext.count + sealBytes)
        // libsodium refuses a key of small order (the shared secret would be all zeros).
        guard crypto_box_seal(&out, Signer.base(plaintext), UInt64(plaintext.count), publicKey) == 0 else {
            throw KeychainError(.param, "the X25519 public key is not a usable one (it is of small order)")
        }
        return out
    }

    package static func seal(_ secret: SecureBytes, to publicKey: [UInt8]) throws -> [UInt8] {
        try secret.withUnsafeBytes { try seal($0, to: publicKey) }
    }

    /// What `sealed` holds, in guarded memory; nil when it doesn't open with
    /// this key pair (sealed to another key, altered, or too short).
    package static func open(_ sealed: UnsafeRawBufferPointer, publicKey: [UInt8], secretKey: SecureBytes) throws -> SecureBytes? {
        guard sealed.count >= sealBytes, publicKey.count == Int(crypto_box_publickeybytes()),
              secretKey.count == Int(crypto_box_secretkeybytes()), let base = sealed.baseAddress else { return nil }
        let length = sealed.count - sealBytes
        // One byte more than the message, so that an empty one still has an address.
        let out = try SecureBytes(count: length + 1)
        let rc = out.withUnsafeMutableBytes { m in
            secretKey.withUnsafeBytes { sk in
                crypto_box_seal_open(m.baseAddress!.assumingMemoryBound(to: UInt8.self), base.assumingMemoryBound(to: UInt8.self),
                                     UInt64(sealed.count), publicKey, sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return rc == 0 ? try out.prefix(length) : nil
    }

    package static func open(_ sealed: [UInt8], publicKey: [UInt8], secretKey: SecureBytes) throws -> SecureBytes? {
        try sealed.withUnsafeBytes { try open($0, publicKey: publicKey, secretKey: secretKey) }
    }

    /// Opens with a stored X25519 private key (`key decrypt`).
    package static func open(_ ciphertext: UnsafeRawBufferPointer, key: AsymmetricKey, pkcs8: SecureBytes) throws -> SecureBytes {
        try Sodium.ready()
        guard ciphertext.count >= sealBytes else { throw KeychainError(.decode, "the sealed box is shorter than \(sealBytes) bytes") }
        let secret = try pkcs8.withUnsafeBytes { try EVPKey(pkcs8: $0) }.rawPrivateKey()
        guard let out = try open(ciphertext, publicKey: key.publicKeyExternalRepresentation, secretKey: secret) else {
            throw KeychainError(.decode, "the sealed box could not be opened with this key (tampered, or sealed to another key)")
        }
        return out
    }
}
