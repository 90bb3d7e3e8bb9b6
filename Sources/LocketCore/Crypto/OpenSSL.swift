import CCrypto

/// OpenSSL's libcrypto, for what libsodium does not do (X.509, PKCS#12,
/// RSA and NIST curves, SHA-1 where Apple's formats need it). Every call's
/// result passes through `check`, which turns libcrypto's error queue into a
/// KeychainError with a readable reason. Nothing on the password path calls
/// into it: a static executable that links libcrypto and never calls it pays
/// about 37 k instructions at start-up (SPEC §1).
enum OpenSSL {
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
}
