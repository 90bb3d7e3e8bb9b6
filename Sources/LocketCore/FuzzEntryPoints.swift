/// Fuzzing only (`fuzz/`): the engine's decoders of untrusted bytes, reachable
/// without a keychain. Each must return or throw KeychainError, never crash.
public enum FuzzEntryPoints {
    /// An item's sealed attribute record after opening.
    public static func decodeItemRecord(_ bytes: [UInt8]) {
        // Its access-control field too (SPEC §14), as `open` decodes it.
        if let access = (try? ItemRecord.decode(SecureBytes(copying: bytes)))?.access {
            _ = try? ItemAccess(encoded: access, protection: .whenUnlocked)
        }
    }

    /// An item's sealed secret record (secret plus metadata) after opening.
    public static func decodeDataRecord(_ bytes: [UInt8]) {
        _ = try? DataRecord.decode(SecureBytes(copying: bytes))
    }

    /// A session record as read from the keyring or the session directory.
    public static func decodeSessionRecord(_ bytes: [UInt8]) {
        guard let record = try? SecureBytes(copying: bytes) else { return }
        _ = try? SessionKeys.decode(record, header: Array("LKS1".utf8))
        _ = SessionKeys.header(record, header: Array("LKS1".utf8))
    }

    /// The keychain header's password-hash parameters.
    public static func decodeKDFParameters(_ bytes: [UInt8]) {
        _ = KDFParameters(encoded: bytes)
    }

    /// Opening a sealed value with a fixed key: must fail cleanly on garbage.
    public static func openSealed(_ bytes: [UInt8]) {
        _ = try? SecretBox.open(bytes, key: SecureBytes(count: SecretBox.keyBytes), what: "fuzz input")
    }
}
