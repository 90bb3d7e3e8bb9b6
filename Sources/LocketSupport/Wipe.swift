internal import CSodium

// sodium_memzero rather than a loop of stores: the compiler may drop stores
// to memory that is not read again, and this must happen.

/// Zeroes bytes that held a secret. The corresponding C function is `sodium_memzero`.
public func wipe(_ bytes: UnsafeMutableRawBufferPointer) {
    if let base = bytes.baseAddress, bytes.count > 0 { sodium_memzero(base, bytes.count) }
}

/// Zeroes a plain array that held secret bytes (its capacity stays).
public func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { wipe($0) }
}

/// Zeroes a plain array of words that held secret state.
public func wipe(_ words: inout [UInt32]) {
    words.withUnsafeMutableBytes { wipe($0) }
}
