import CSodium
import LocketSupport

/// Keyed BLAKE2b (`crypto_generichash`) for every derived key and blind
/// index. Contexts are domain-separated byte strings built with `Context`.
package enum KeyDerivation {
    /// A 32-byte key derived from `key` for `context`.
    package static func derive(_ key: SecureBytes, _ context: Context) throws -> SecureBytes {
        let out = try SecureBytes(count: 32)
        hash(key, context.bytes, into: out)
        return out
    }

    /// `derive(key, Context(label).with(a).with(b).with(c))`, the context
    /// encoded in a stack buffer: no allocation but the key's (a field key per
    /// sealed value opened).
    static func derive(_ key: SecureBytes, _ label: StaticString, _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer,
                       _ c: UnsafeRawBufferPointer) throws -> SecureBytes {
        let out = try SecureBytes(count: 32)
        let label = UnsafeRawBufferPointer(start: label.utf8Start, count: label.utf8CodeUnitCount)
        withUnsafeTemporaryAllocation(byteCount: 16 + label.count + a.count + b.count + c.count, alignment: 8) { message in
            var at = 0
            func put(_ field: UnsafeRawBufferPointer) {
                BigEndian.store(UInt32(field.count), into: message, at: at)
                if let from = field.baseAddress { (message.baseAddress! + at + 4).copyMemory(from: from, byteCount: field.count) }
                at += 4 + field.count
            }
            put(label); put(a); put(b); put(c)
            hash(key, UnsafeRawBufferPointer(message), into: out)
        }
        return out
    }

    /// A 16-byte keyed digest, used for primary keys and blind indexes.
    static func digest(_ key: SecureBytes, _ context: Context) -> [UInt8] {
        key.withUnsafeBytes { digest(keyedBy: $0, context) }
    }

    /// `digest` keyed by a value that is no secret (a keychain ID): no
    /// guarded copy of it, so nothing that can fail to allocate.
    static func digest(id: [UInt8], _ context: Context) -> [UInt8] {
        id.withUnsafeBytes { digest(keyedBy: $0, context) }
    }

    private static func digest(keyedBy key: UnsafeRawBufferPointer, _ context: Context) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 16)
        context.bytes.withUnsafeBytes { m in
            out.withUnsafeMutableBytes { o in
                _ = crypto_generichash(o.baseAddress!.assumingMemoryBound(to: UInt8.self), 16,
                                       m.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(m.count),
                                       key.baseAddress?.assumingMemoryBound(to: UInt8.self), key.count)
            }
        }
        return out
    }

    /// The first 8 bytes of `digest(key, context)`, big-endian, without
    /// allocating: a blind index (an import makes one per attribute per item).
    static func digest64(_ key: SecureBytes, _ context: Context) -> UInt64 {
        var out: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &out) { o in
            key.withUnsafeBytes { k in
                context.bytes.withUnsafeBytes { m in
                    _ = crypto_generichash(o.baseAddress!.assumingMemoryBound(to: UInt8.self), 16,
                                           m.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(m.count),
                                           k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
                }
            }
        }
        return UInt64(bigEndian: out.0)
    }

    private static func hash(_ key: SecureBytes, _ message: [UInt8], into out: SecureBytes) {
        message.withUnsafeBytes { hash(key, $0, into: out) }
    }

    private static func hash(_ key: SecureBytes, _ m: UnsafeRawBufferPointer, into out: SecureBytes) {
        key.withUnsafeBytes { k in
            out.withUnsafeMutableBytes { o in
                _ = crypto_generichash(o.baseAddress!.assumingMemoryBound(to: UInt8.self), o.count,
                                       m.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(m.count),
                                       k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
            }
        }
    }

    /// An unambiguous encoding of a derivation's inputs: a label, then
    /// length-prefixed fields, so that no two different inputs collide.
    package struct Context {
        private(set) var bytes: [UInt8]

        package init(_ label: StaticString) {
            bytes = []
            bytes.reserveCapacity(64)
            append(UnsafeRawBufferPointer(start: label.utf8Start, count: label.utf8CodeUnitCount))
        }

        mutating func append<Bytes: Collection<UInt8>>(_ field: Bytes) {
            // Byte by byte: an array literal here was an allocation per field, per item of a dump.
            BigEndian.append(UInt32(field.count), to: &bytes)
            bytes.append(contentsOf: field)
        }

        mutating func append(_ string: String) {
            // Through its contiguous bytes: the generic path over a UTF8View
            // went a byte at a time.
            var string = string
            string.withUTF8 { append($0) }
        }

        /// `field` behind a one-byte tag 1, or the tag 0 alone for nil: the
        /// same bytes as appending `[1] + field` or `[0]`, without making them.
        mutating func append(tagged field: [UInt8]?) {
            guard let field else { return append(CollectionOfOne(UInt8(0))) }
            BigEndian.append(UInt32(field.count + 1), to: &bytes)
            bytes.append(1)
            bytes.append(contentsOf: field)
        }

        /// Makes room for `count` more bytes at once (a context of many fields).
        mutating func reserve(_ count: Int) { bytes.reserveCapacity(bytes.count + count) }

        /// How many bytes are encoded so far (for `truncate`).
        var count: Int { bytes.count }

        /// Drops the fields appended after the context had `count` bytes: one
        /// context serves digests that share a prefix, without copying it.
        mutating func truncate(to count: Int) { bytes.removeSubrange(count...) }

        package func with<Bytes: Collection<UInt8>>(_ field: Bytes) -> Context {
            var copy = self
            copy.append(field)
            return copy
        }

        func with(_ string: String) -> Context {
            var copy = self
            copy.append(string)
            return copy
        }

        /// Overwrites the encoded inputs (when one of them is key material).
        mutating func wipe() { LocketSupport.wipe(&bytes) }
    }
}
