import CSodium

/// libsodium's one entry point: every call site goes through here first, and
/// every return code through `check`.
package enum Sodium {
    /// `sodium_init` runs once per process, on first use only, so that
    /// commands which never touch a key (`--version`, `help`) skip it.
    private static let initialized: Bool = sodium_init() >= 0

    package static func ready() throws {
        guard initialized else { throw KeychainError(.io, "libsodium could not be initialized") }
    }

    /// Fills `count` bytes from the system's CSPRNG.
    package static func random(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, count) }
        return bytes
    }

    /// Fails with errSecDecode when libsodium reports an error.
    package static func check(_ rc: Int32, _ what: @autoclosure () -> String) throws {
        if rc != 0 { throw KeychainError(.decode, what()) }
    }

    /// Equality in constant time (`sodium_memcmp`).
    package static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        a.count == b.count && (a.count == 0 || sodium_memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
    }
}

/// The system's CSPRNG for callers outside the engine (the Security module's
/// SecRandomCopyBytes): libsodium's `randombytes_buf`, as every key here is made.
public enum SecureRandom {
    /// Fills `buffer` with random bytes.
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        try Sodium.ready()
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        randombytes_buf(base, buffer.count)
    }
}
