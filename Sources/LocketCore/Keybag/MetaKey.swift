import LocketSupport

/// The names of the `meta` table's rows. The table stays keyed by text (the
/// header MAC covers every row by name, including rows a newer release
/// adds), but the engine names a row only through this enum.
package enum MetaKey: String, CaseIterable {
    /// The keychain format (SPEC §7), 8 bytes big-endian.
    case format
    /// The keychain's random identity (16 bytes).
    case id
    /// A fingerprint of the device key the device-bound class keys are wrapped for.
    case deviceFingerprint = "device_fp"
    /// The Argon2id parameters; absent on a keychain without a password.
    case kdf
    /// The default auto-lock timeout in seconds.
    case timeout
    /// Consecutive wrong passwords.
    case failures
    /// When the last wrong password was given, in seconds (older releases) and milliseconds.
    case failedAt = "failed_at"
    case failedAtMilliseconds = "failed_at_ms"
    /// Device-bound items with ids up to this one belong to an earlier device.
    case thisDeviceOnlyBoundary = "tdo_boundary"
    /// The header's write generation, key check and MAC (Header.swift).
    case generation
    case keyCheck = "key_check"
    case headerMAC = "header_mac"
    /// The public keys of the presence key pairs (PresenceKeys): user-presence and password-current-set.
    case presencePublicKey = "upk_pub"
    case currentSetPublicKey = "pcs_pub"
    /// Seconds one proof of presence serves the same terminal session (`settings --presence-reuse`).
    case presenceReuse = "presence_reuse"
    /// Present once an item unique by reference was added (FreeForm): a query
    /// giving the whole primary key may then match more than the one item
    /// its digest names, so lookups go through the blind rows instead.
    case uniqueByReference = "unique_by_ref"
    /// Whether the Secret Service provider locks the keychain before the
    /// machine sleeps and when the session's screen locks (SPEC §20): one
    /// byte, 0 for no; absent means yes.
    case lockOnSleep = "lock_on_sleep"
    case lockOnScreenLock = "lock_on_screen_lock"
    /// A keychain bound to its machine's TPM (SPEC §21): the binding secret
    /// sealed by the TPM, a TSS2 sealed key file's DER (KeychainEngine+TPMBinding).
    case tpm
}

extension Dictionary where Key == String, Value == [UInt8] {
    /// The row named by `key`.
    package subscript(_ key: MetaKey) -> [UInt8]? {
        get { self[key.rawValue] }
        set { self[key.rawValue] = newValue }
    }

    /// The row named by `key` as a big-endian integer, nil when absent.
    package func integer(_ key: MetaKey) -> Int64? { self[key].map(BigEndian.int64) }
}
