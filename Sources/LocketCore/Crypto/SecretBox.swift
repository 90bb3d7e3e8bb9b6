import CSodium

/// `crypto_secretbox_easy` with a fresh random nonce per seal. A sealed value
/// is `nonce || mac || ciphertext`.
package enum SecretBox {
    static let keyBytes = Int(crypto_secretbox_KEYBYTES)
    static let nonceBytes = Int(crypto_secretbox_NONCEBYTES)
    static let overhead = Int(crypto_secretbox_NONCEBYTES) + Int(crypto_secretbox_MACBYTES)

    /// Seals `plaintext` under `key`.
    package static func seal(_ plaintext: UnsafeRawBufferPointer, key: SecureBytes) -> [UInt8] {
        precondition(key.count == keyBytes)
        var out = [UInt8](repeating: 0, count: overhead + plaintext.count)
        out.withUnsafeMutableBytes { dst in
            let base = dst.baseAddress!.assumingMemoryBound(to: UInt8.self)
            randombytes_buf(base, nonceBytes)
            key.withUnsafeBytes { k in
                let rc = crypto_secretbox_easy(base + nonceBytes,
                                               plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(base),
                                               UInt64(plaintext.count), base,
                                               k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                precondition(rc == 0)
            }
        }
        return out
    }

    package static func seal(_ plaintext: [UInt8], key: SecureBytes) -> [UInt8] {
        plaintext.withUnsafeBytes { seal($0, key: key) }
    }

    package static func seal(_ plaintext: SecureBytes, key: SecureBytes) -> [UInt8] {
        plaintext.withUnsafeBytes { seal($0, key: key) }
    }

    /// Opens a sealed value into guarded memory; errSecDecode when it was
    /// sealed under another key or altered.
    package static func open(_ sealed: UnsafeRawBufferPointer, key: SecureBytes, what: @autoclosure () -> String) throws -> SecureBytes {
        guard sealed.count >= overhead else { throw KeychainError(.decode, "\(what()) is truncated") }
        let out = try SecureBytes(count: sealed.count - overhead)
        let rc: Int32 = out.withUnsafeMutableBytes { dst in
            key.withUnsafeBytes { k in
                let src = sealed.baseAddress!.assumingMemoryBound(to: UInt8.self)
                var scratch: UInt8 = 0
                return withUnsafeMutablePointer(to: &scratch) { fallback in
                    crypto_secretbox_open_easy(dst.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? fallback,
                                               src + nonceBytes, UInt64(sealed.count - nonceBytes), src,
                                               k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        try Sodium.check(rc, "\(what()) could not be opened: it was altered or sealed under another key")
        return out
    }

    package static func open(_ sealed: [UInt8], key: SecureBytes, what: @autoclosure () -> String) throws -> SecureBytes {
        try sealed.withUnsafeBytes { try open($0, key: key, what: what()) }
    }
}
