import CLocketSystem
import LocketSupport

/// A session in the kernel's user keyring: a `user` key per slot, named for
/// the keychain's identity, readable by this user from any login session,
/// its expiry the kernel's timer (restarted at each use).
extension SessionStore {
    /// A slot is a tier's name, or another record of this keychain's (the
    /// presence reuse window of one terminal session).
    func description(_ slot: String) -> String { "locket:\(keychainID):\(slot)" }

    func keyringSerial(_ slot: String) -> Int32? {
        let serial = locket_keyctl_search(locket_key_spec_user_keyring(), "user", description(slot))
        return serial >= 0 ? Int32(truncatingIfNeeded: serial) : nil
    }

    /// The payload of the keyring key `serial`, whole; nil when it does not read.
    func readKey(_ serial: Int32) throws -> SecureBytes? {
        // A record (a dozen keys) fits a pooled guarded slot; a region as
        // large as the largest record costs nine system calls to make and
        // free. keyctl_read returns the record's size even when it copied
        // less: a larger one is read again into a buffer of its size.
        var buffer = try SecureBytes(count: SessionStore.typicalRecordSize)
        var n = buffer.withUnsafeMutableBytes { locket_keyctl_read(serial, $0.baseAddress, $0.count) }
        if n > buffer.count && n <= SessionKeys.maximumSize {
            buffer = try SecureBytes(count: n)
            n = buffer.withUnsafeMutableBytes { locket_keyctl_read(serial, $0.baseAddress, $0.count) }
        }
        guard n > 0, n <= buffer.count else { return nil }
        return try buffer.prefix(n)
    }

    func loadFromKeyring(_ slot: String, extend: Bool) throws -> (SessionKeys, Info)? {
        guard let serial = keyringSerial(slot), let record = try readKey(serial) else { return nil }
        guard let (keys, timeout) = try SessionKeys.decode(record, header: Self.magic) else {
            throw KeychainError(.decode, "the session in the kernel keyring is damaged", reason: .sessionDamaged)
        }
        let now = time.seconds()
        if timeout > 0 && extend {
            // Record this use in the payload (for status) and restart the kernel's timer.
            SessionKeys.stamp(record, header: Self.magic, lastUse: now)
            _ = record.withUnsafeBytes { locket_keyctl_update(serial, $0.baseAddress, $0.count) }
            _ = locket_keyctl_set_timeout(serial, timeout)
        }
        return (keys, Info(backend: .keyring, timeout: timeout, lastUse: now, now: now))
    }
}
