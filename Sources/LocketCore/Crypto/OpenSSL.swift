import CCrypto

/// OpenSSL's libcrypto, for what libsodium does not do (X.509, PKCS#12,
/// RSA and NIST curves, SHA-1 where Apple's formats need it). Every call's
/// result passes through `check`, which turns libcrypto's error queue into a
/// KeychainError with a readable reason. Nothing on the password path calls
/// into it: a static executable that links libcrypto and never calls it pays
/// about 37 k instructions at start-up (SPEC §1).
enum OpenSSL {
    /// libcrypto is set up on first use only, never at start-up: the static
    /// library's default provider is built in, so no configuration file,
    /// provider module or engine is read (`OPENSSL_CONF` and /usr/lib/ssl are
    /// ignored, and nothing can be loaded into locket through them); private
    /// BIGNUMs libcrypto allocates while a key is open go to its secure heap
    /// (mlock'd, guard pages, wiped on free), as locket's own copies live in
    /// guarded memory.
    private static let initialized: Bool = {
        guard OPENSSL_init_crypto(UInt64(locket_init_no_config()), nil) == 1 else { return false }
        // 64 KiB holds the BIGNUMs of several RSA-4096 keys at once; a failure
        // (mlock refused) leaves libcrypto on its ordinary heap, still wiped on free.
        _ = CRYPTO_secure_malloc_init(secureHeapSize, 32)
        return true
    }()

    /// The size of libcrypto's secure heap.
    static let secureHeapSize = 64 * 1024

    /// Fails unless libcrypto could be initialized; every entry point of the
    /// key layer calls it first.
    static func ready() throws {
        guard initialized else { throw failure(.io, "libcrypto could not be initialized") }
    }

    /// A static string as the C string libcrypto takes; valid for the whole
    /// run, as libcrypto 3.0 keeps some name pointers (key types in
    /// contexts, strings in parameter builders) past the call.
    static func cString(_ s: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// Fails with `code` unless `rc` is libcrypto's success (1). The message
    /// is `what`, then the reason libcrypto gives for its newest error.
    static func check(_ rc: Int32, _ code: KeychainError.Code, _ what: @autoclosure () -> String) throws {
        if rc != 1 { throw failure(code, what()) }
    }

    /// Returns `pointer`, or fails with `code` when libcrypto returned NULL.
    static func check<T>(_ pointer: T?, _ code: KeychainError.Code, _ what: @autoclosure () -> String) throws -> T {
        guard let pointer else { throw failure(code, what()) }
        return pointer
    }

    /// The error for a failed call, with libcrypto's reason; empties the
    /// error queue so that a later failure is not blamed on this one.
    static func failure(_ code: KeychainError.Code, _ what: String) -> KeychainError {
        let reason = lastReason()
        ERR_clear_error()
        return KeychainError(code, reason.map { "\(what): \($0)" } ?? what)
    }

    /// The reason string of the newest error in the queue, lowercased as
    /// locket's messages are; nil when the queue is empty.
    static func lastReason() -> String? {
        let error = ERR_peek_last_error()
        guard error != 0, let text = ERR_reason_error_string(error) else { return nil }
        return String(cString: text).lowercased()
    }

    /// The signature of libcrypto's `i2d_TYPE(object, &out)` encoders, bound to one object.
    typealias Encoder = (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32

    /// What `encode` writes (asked for its length first, then into a buffer
    /// of exactly that length); `what` names the object in the error.
    static func der(_ what: @autoclosure () -> String, _ code: KeychainError.Code = .param, _ encode: Encoder) throws -> [UInt8] {
        let length = Int(encode(nil))
        guard length > 0 else { throw failure(code, "\(what()) could not be encoded") }
        var out = [UInt8](repeating: 0, count: length)
        try out.withUnsafeMutableBufferPointer { buffer in
            var p: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            guard encode(&p) == length else { throw failure(code, "\(what()) could not be encoded") }
        }
        return out
    }

    /// The same into guarded memory, for encodings of private keys.
    static func secureDER(_ what: @autoclosure () -> String, _ encode: Encoder) throws -> SecureBytes {
        let length = Int(encode(nil))
        guard length > 0 else { throw failure(.param, "\(what()) could not be encoded") }
        let out = try SecureBytes(count: length)
        try out.withUnsafeMutableBytes { buffer in
            var p: UnsafeMutablePointer<UInt8>? = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            guard encode(&p) == length else { throw failure(.param, "\(what()) could not be encoded") }
        }
        return out
    }

    /// The object a `d2i_TYPE(NULL, &p, length)` decoder reads from the whole
    /// of `der` (`what` names it in errors); errSecDecode when `der` is empty,
    /// does not decode, or has bytes left over (then `free` releases the object).
    static func read<T>(_ der: UnsafeRawBufferPointer, _ what: String, free: (T) -> Void,
                        _ decode: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> T?) throws -> T {
        try ready()
        guard let base = der.baseAddress?.assumingMemoryBound(to: UInt8.self), der.count > 0 else {
            throw KeychainError(.decode, "empty \(what)")
        }
        var p: UnsafePointer<UInt8>? = base
        let object = try check(decode(&p, der.count), .decode, "not a valid \(what)")
        guard p == base + der.count else {
            free(object)
            throw KeychainError(.decode, "trailing bytes after the \(what)")
        }
        return object
    }
}
