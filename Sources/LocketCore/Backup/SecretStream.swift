import CSodium

/// libsodium's `crypto_secretstream_xchacha20poly1305`: a sequence of
/// authenticated messages under one key, each bound to its position (a
/// counter in the nonce) and to every message before it (each MAC is mixed
/// into the next nonce), the last one tagged FINAL. The state holds the key,
/// so it lives in guarded memory.
final class SecretStream {
    static let keyBytes = Int(crypto_secretstream_xchacha20poly1305_keybytes())
    static let headerBytes = Int(crypto_secretstream_xchacha20poly1305_headerbytes())
    /// Ciphertext bytes added to each message (tag byte and MAC).
    static let overhead = Int(crypto_secretstream_xchacha20poly1305_abytes())
    static let tagMessage = crypto_secretstream_xchacha20poly1305_tag_message()
    static let tagFinal = crypto_secretstream_xchacha20poly1305_tag_final()

    private let state: SecureBytes

    private init() throws {
        state = try SecureBytes(count: crypto_secretstream_xchacha20poly1305_statebytes())
    }

    private func withState<R>(_ body: (UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>) throws -> R) rethrows -> R {
        try state.withUnsafeMutableBytes { raw in
            try body(raw.baseAddress!.bindMemory(to: crypto_secretstream_xchacha20poly1305_state.self, capacity: 1))
        }
    }

    /// A stream to encrypt under `key`, and the header a reader needs.
    static func push(key: SecureBytes) throws -> (SecretStream, header: [UInt8]) {
        try Sodium.ready()
        precondition(key.count == keyBytes)
        let stream = try SecretStream()
        var header = [UInt8](repeating: 0, count: headerBytes)
        let rc = stream.withState { s in
            key.withUnsafeBytes { k in
                crypto_secretstream_xchacha20poly1305_init_push(s, &header, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard rc == 0 else { throw KeychainError(.io, "the backup stream could not be started") }
        return (stream, header)
    }

    /// A stream to decrypt under `key`, from the writer's header.
    static func pull(key: SecureBytes, header: [UInt8]) throws -> SecretStream {
        try Sodium.ready()
        precondition(key.count == keyBytes && header.count == headerBytes)
        let stream = try SecretStream()
        let rc = stream.withState { s in
            key.withUnsafeBytes { k in
                crypto_secretstream_xchacha20poly1305_init_pull(s, header, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        try Sodium.check(rc, "the backup's stream header is malformed")
        return stream
    }

    /// Encrypts `plaintext` into `out` (which must hold `plaintext.count + overhead` bytes).
    func push(_ plaintext: UnsafeRawBufferPointer, additional: [UInt8], tag: UInt8, into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count >= plaintext.count + SecretStream.overhead)
        var scratch: UInt8 = 0
        let rc = withState { s in
            additional.withUnsafeBufferPointer { ad in
                withUnsafePointer(to: &scratch) { empty in
                    crypto_secretstream_xchacha20poly1305_push(
                        s, out.baseAddress!.assumingMemoryBound(to: UInt8.self), nil,
                        plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? empty, UInt64(plaintext.count),
                        ad.baseAddress ?? empty, UInt64(ad.count), tag)
                }
            }
        }
        precondition(rc == 0)
    }

    /// Decrypts and verifies one message into `out`; returns its length and
    /// tag, or nil when it fails to authenticate (altered, reordered,
    /// duplicated, or from another stream).
    func pull(_ ciphertext: UnsafeRawBufferPointer, additional: [UInt8],
              into out: UnsafeMutableRawBufferPointer) -> (count: Int, tag: UInt8)? {
        guard ciphertext.count >= SecretStream.overhead, out.count >= ciphertext.count - SecretStream.overhead else { return nil }
        var tag: UInt8 = 0
        var length: UInt64 = 0
        var scratch: UInt8 = 0
        let rc = withState { s in
            additional.withUnsafeBufferPointer { ad in
                withUnsafeMutablePointer(to: &scratch) { empty in
                    crypto_secretstream_xchacha20poly1305_pull(
                        s, out.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? empty, &length, &tag,
                        ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(ciphertext.count),
                        ad.baseAddress.map { UnsafePointer($0) } ?? UnsafePointer(empty), UInt64(ad.count))
                }
            }
        }
        return rc == 0 ? (Int(length), tag) : nil
    }
}
