import LocketCore

/// Sealed values of a remote keychain padded to size buckets (docs/REMOTE.md
/// "What the server sees"): the engine's sealed attributes and secret, each
/// padded (ISO/IEC 7816-4: 0x80, then zeros) to the next bucket and sealed
/// again under a key derived from the access group's key, so
/// `octet_length(attrs|data)` tells the server a bucket, not a length.
/// Buckets: 128 bytes, doubling up to 64 KiB, then multiples of 64 KiB.
enum RemotePadding {
    static func bucket(_ count: Int) -> Int {
        let needed = count + 1
        if needed > 64 << 10 { return (needed + (64 << 10) - 1) / (64 << 10) * (64 << 10) }
        var size = 128
        while size < needed { size *= 2 }
        return size
    }

    static func key(groupKey: SecureBytes) throws -> SecureBytes {
        try KeyDerivation.derive(groupKey, KeyDerivation.Context("locket.remote.padding.v1"))
    }

    static func seal(_ sealed: [UInt8], key: SecureBytes) -> [UInt8] {
        var padded = sealed
        padded.append(0x80)
        padded += [UInt8](repeating: 0, count: bucket(sealed.count) - padded.count)
        return SecretBox.seal(padded, key: key)
    }

    static func open(_ stored: [UInt8], key: SecureBytes) throws -> [UInt8] {
        let padded = try SecretBox.open(stored, key: key, what: "an item's padded value")
        return try padded.withUnsafeBytes { bytes in
            guard let end = bytes.lastIndex(where: { $0 != 0 }), bytes[end] == 0x80 else {
                throw KeychainError(.decode, "an item's padded value is malformed: the database was altered")
            }
            return Array(bytes[..<end])
        }
    }
}
