import CLocketSystem
import CSodium
import Glibc
import LocketSupport

/// Watching a session for a caller that keeps a keychain open between calls
/// (`Keychain.sessionFingerprint`, the Security module), instead of loading
/// it once per command.
extension SessionStore {
    /// The record of `tier` as stored now, its last-use stamp zeroed (a use
    /// is no change), for a long-lived caller that checks at every call
    /// whether another process locked, unlocked or let the session expire
    /// (SPEC §19); nil when there is none. A keyring record is read by the
    /// serial `serials` remembers, one system call, while that key still
    /// reads (a lock invalidates it); a search finds it otherwise.
    func currentRecord(_ tier: ProtectionClass.Tier, serials: inout [String: Int32], directory: inout Directory) -> SecureBytes? {
        let slot = tier.rawValue
        if forced != .directory {
            if let serial = serials[slot], let record = stampedRecord(serial) { return record }
            serials[slot] = nil
            if let serial = keyringSerial(slot), let record = stampedRecord(serial) {
                serials[slot] = serial
                return record
            }
        }
        guard forced != .keyring, let dir = directory.descriptor(),
              let sessionFile = try? PrivateFile(name(slot), in: dir, rule: .privateFile),
              sessionFile.size > 0, sessionFile.size <= SessionKeys.maximumSize, let record = try? SecureBytes(count: sessionFile.size),
              record.withUnsafeMutableBytes({ (try? sessionFile.read(into: $0).get()) == $0.count }),
              let (timeout, _) = SessionKeys.header(record, header: Self.magic) else { return nil }
        // Expired by its modification time, as `load` judges it (which also removes it).
        if timeout > 0 && time.seconds() - Int64(sessionFile.status.st_mtim.tv_sec) >= Int64(timeout) { return nil }
        SessionKeys.stamp(record, header: Self.magic, lastUse: 0)
        return record
    }

    /// A digest of both tiers' records as they are now (`currentRecord`),
    /// keyed by `key` (the keychain's identity): it changes when another
    /// process unlocks, locks or lets the session expire, and not when a use
    /// is stamped. `directory`: as the loads just before saw it, if any.
    func fingerprint(key: [UInt8], serials: inout [String: Int32], directory: inout Directory) -> [UInt8] {
        // libsodium's state is opaque to Swift: its size comes from the library.
        let memory = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        defer {
            sodium_memzero(memory, crypto_generichash_statebytes())
            memory.deallocate()
        }
        let state = OpaquePointer(memory)
        key.withUnsafeBytes { id in
            _ = crypto_generichash_init(state, id.baseAddress!.assumingMemoryBound(to: UInt8.self), id.count, 16)
        }
        func absorb(_ bytes: UnsafeRawBufferPointer) {
            var length = UInt32(bytes.count).bigEndian
            withUnsafeBytes(of: &length) { _ = crypto_generichash_update(state, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), 4) }
            if let base = bytes.baseAddress { _ = crypto_generichash_update(state, base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count)) }
        }
        for tier in [ProtectionClass.Tier.afterFirstUnlock, .whenUnlocked] {
            if let record = currentRecord(tier, serials: &serials, directory: &directory) {
                record.withUnsafeBytes { absorb($0) }
            } else {
                absorb(UnsafeRawBufferPointer(start: nil, count: 0))
            }
        }
        var out = [UInt8](repeating: 0, count: 16)
        out.withUnsafeMutableBytes { _ = crypto_generichash_final(state, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), 16) }
        return out
    }

    /// A keyring key's payload when it is a session record, its stamp zeroed.
    private func stampedRecord(_ serial: Int32) -> SecureBytes? {
        guard let record = try? readKey(serial), SessionKeys.header(record, header: Self.magic) != nil else { return nil }
        SessionKeys.stamp(record, header: Self.magic, lastUse: 0)
        return record
    }
}
