import LocketCore

// Apple's SecRandom: random bytes from the system's CSPRNG (libsodium's
// randombytes_buf here), as Apple code asks for salts, nonces and tokens.

/// A random number generator. There is one: `kSecRandomDefault` (nil, as Apple's).
public typealias SecRandomRef = OpaquePointer

/// The default generator, the only one.
nonisolated(unsafe) public let kSecRandomDefault: SecRandomRef? = nil

/// Fills `count` bytes at `bytes` with cryptographically secure random
/// bytes. `rnd` must be nil or `kSecRandomDefault`. Returns errSecSuccess,
/// or -1 (and writes nothing) when no random bytes can be had, as Apple's does.
public func SecRandomCopyBytes(_ rnd: SecRandomRef?, _ count: Int, _ bytes: UnsafeMutableRawPointer) -> Int32 {
    guard count >= 0 else { return -1 }
    do {
        try SecureRandom.fill(UnsafeMutableRawBufferPointer(start: bytes, count: count))
        return errSecSuccess
    } catch {
        return -1
    }
}
