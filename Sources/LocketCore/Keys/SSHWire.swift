import LocketSupport

// The SSH wire encoding (RFC 4251 section 5: uint32, string, mpint) that
// OpenSSH's key files, public key blobs and agent signatures are made of. The
// reader hands out views into its input, never copies, because the input may
// be a decrypted private key; the writer sizes its output first and writes
// it once, into guarded memory when it holds a secret.

/// Reads SSH wire values from a buffer it does not own.
struct SSHReader {
    private let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }
    var isAtEnd: Bool { offset == bytes.count }

    mutating func bytes(_ n: Int) throws -> UnsafeRawBufferPointer {
        guard n >= 0, n <= remaining else { throw KeychainError(.decode, "truncated SSH data") }
        defer { offset += n }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)])
    }

    mutating func uint32() throws -> UInt32 {
        UInt32(BigEndian.value(try bytes(4)))
    }

    mutating func byte() throws -> UInt8 { try bytes(1)[0] }

    /// A length-prefixed string, as a view.
    mutating func string() throws -> UnsafeRawBufferPointer {
        let n = try uint32()
        guard n <= UInt32(remaining) else { throw KeychainError(.decode, "truncated SSH data") }
        return try bytes(Int(n))
    }

    /// A string that must be printable text (names, comments).
    mutating func text() throws -> String {
        let b = try string()
        guard let s = String(validating: b, as: UTF8.self) else { throw KeychainError(.decode, "invalid text in SSH data") }
        return s
    }

    /// A non-negative mpint without its sign byte, as a view.
    mutating func mpint() throws -> UnsafeRawBufferPointer {
        let b = try string()
        if b.isEmpty { return b }
        guard b[0] & 0x80 == 0 else { throw KeychainError(.decode, "negative mpint in SSH data") }
        var start = 0
        while start < b.count && b[start] == 0 { start += 1 }
        return UnsafeRawBufferPointer(rebasing: b[start...])
    }
}

/// Writes SSH wire values; `SSHWriter.encode` runs the same closure twice,
/// once to count and once to write into an exactly sized buffer.
struct SSHWriter {
    private let base: UnsafeMutableRawPointer?
    private(set) var count = 0

    private init(_ base: UnsafeMutableRawPointer?) { self.base = base }

    /// The encoding in guarded memory.
    static func encodeSecret(_ body: (inout SSHWriter) throws -> Void) throws -> SecureBytes {
        var counter = SSHWriter(nil)
        try body(&counter)
        let out = try SecureBytes(count: counter.count)
        try out.withUnsafeMutableBytes { buffer in
            var writer = SSHWriter(buffer.baseAddress)
            try body(&writer)
            precondition(writer.count == counter.count)
        }
        return out
    }

    /// The encoding as plain bytes (public keys, signatures).
    static func encode(_ body: (inout SSHWriter) throws -> Void) rethrows -> [UInt8] {
        var counter = SSHWriter(nil)
        try body(&counter)
        return try [UInt8](unsafeUninitializedCapacity: counter.count) { buffer, initialized in
            var writer = SSHWriter(UnsafeMutableRawPointer(buffer.baseAddress))
            try body(&writer)
            precondition(writer.count == counter.count)
            initialized = writer.count
        }
    }

    mutating func raw(_ b: UnsafeRawBufferPointer) {
        if let base, let src = b.baseAddress, b.count > 0 { (base + count).copyMemory(from: src, byteCount: b.count) }
        count += b.count
    }

    mutating func raw(_ b: [UInt8]) { b.withUnsafeBytes { raw($0) } }

    mutating func byte(_ v: UInt8) { withUnsafeBytes(of: v) { raw($0) } }

    mutating func uint32(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { raw($0) } }

    mutating func string(_ b: UnsafeRawBufferPointer) {
        uint32(UInt32(b.count))
        raw(b)
    }

    mutating func string(_ b: [UInt8]) { b.withUnsafeBytes { string($0) } }

    mutating func string(_ s: String) { string(Array(s.utf8)) }

    /// A non-negative integer given big-endian (leading zeros allowed): the
    /// zeros go, and a zero byte leads when the top bit is set.
    mutating func mpint(_ magnitude: UnsafeRawBufferPointer) {
        var start = 0
        while start < magnitude.count && magnitude[start] == 0 { start += 1 }
        let digits = UnsafeRawBufferPointer(rebasing: magnitude[start...])
        let pad = !digits.isEmpty && digits[0] & 0x80 != 0
        uint32(UInt32(digits.count + (pad ? 1 : 0)))
        if pad { byte(0) }
        raw(digits)
    }

    mutating func mpint(_ magnitude: [UInt8]) { magnitude.withUnsafeBytes { mpint($0) } }
}
