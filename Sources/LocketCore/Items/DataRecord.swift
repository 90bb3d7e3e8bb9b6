import LocketSupport

/// What an item's sealed `data` holds: the secret, and optionally helper
/// metadata kept with it (the git credential helper's expiry time and OAuth
/// refresh token). Format: a version byte; 0 = the secret follows; 1 = the
/// secret's length (4 bytes, big-endian), the secret, then the metadata.
enum DataRecord {
    static func encode(secret: SecureBytes, extra: SecureBytes?) throws -> SecureBytes {
        guard let extra else {
            let out = try SecureBytes(count: 1 + secret.count)
            out.withUnsafeMutableBytes { o in secret.withUnsafeBytes { s in
                o[0] = 0
                if s.count > 0 { (o.baseAddress! + 1).copyMemory(from: s.baseAddress!, byteCount: s.count) }
            } }
            return out
        }
        let out = try SecureBytes(count: 5 + secret.count + extra.count)
        out.withUnsafeMutableBytes { o in secret.withUnsafeBytes { s in extra.withUnsafeBytes { e in
            o[0] = 1
            BigEndian.store(UInt32(s.count), into: o, at: 1)
            if s.count > 0 { (o.baseAddress! + 5).copyMemory(from: s.baseAddress!, byteCount: s.count) }
            if e.count > 0 { (o.baseAddress! + 5 + s.count).copyMemory(from: e.baseAddress!, byteCount: e.count) }
        } } }
        return out
    }

    /// The secret and metadata as views of `record` (no second guarded copy
    /// of the secret): the record's memory lives, and is wiped, with them.
    static func decode(_ record: SecureBytes) throws -> (secret: SecureBytes, extra: SecureBytes?) {
        let (version, length) = record.withUnsafeBytes { r in (r.first, BigEndian.read(UInt32.self, r, at: 1).map(Int.init)) }
        switch version {
        case 0:
            return (record.slice(1..<record.count), nil)
        case 1:
            guard let n = length, n <= record.count - 5 else { throw malformed }
            return (record.slice(5..<(5 + n)), record.slice((5 + n)..<record.count))
        default:
            throw malformed
        }
    }

    private static var malformed: KeychainError { KeychainError(.decode, "an item's secret record is malformed") }
}
