import LocketSupport

/// What the engine lends a storage's own administration, which lives in
/// its backend's module (the devices, audit, offline cache and recovery of
/// a keychain many machines share): the storage it opened, the keychain's
/// identity and environment, the caller's standing, keys as far as sealing
/// an item needs them, and the one write path. Never the engine itself: a
/// backend reaches nothing the engine did not give it here.
package struct KeychainGrant {
    private let engine: KeychainEngine

    init(_ engine: KeychainEngine) { self.engine = engine }

    /// The storage the keychain was opened on (its backend knows its own type).
    package var storage: any KeychainStorage { engine.storage }

    /// The keychain's random identity.
    package var keychainID: [UInt8] { engine.keybag.keychainID }

    package var environment: Environment { engine.environment }

    /// Refuses a caller other than the keychain's owner (errSecMissingEntitlement), naming `what`.
    package func requireOwner(_ what: String) throws { try engine.requireOwner(what) }

    /// The blind-index key, or why it is not available (errSecInteractionNotAllowed while locked).
    package func indexKey() throws -> SecureBytes { try engine.indexKey() }

    /// The key that seals `field` of an item, as every read and write derives it.
    package func fieldKey(_ row: Sealing.RowIdentity, _ field: Sealing.Field) throws -> SecureBytes {
        try engine.fieldKey(row, field)
    }

    /// Runs `body` in a write that moves the header to its next generation
    /// (authenticated before, sealed after, the mirror following): what
    /// replacing keys needs.
    package func writeAdvancingHeader<T>(_ body: () throws -> T) throws -> T {
        try engine.write(advancingHeader: true, body)
    }

    /// The highest header generation this machine has seen of the keychain,
    /// nil where none is kept or the blind-index key is not available.
    package func generationSeen() throws -> UInt64? {
        guard let indexKey = engine.keys[Keybag.indexKeyName] else { return nil }
        return try engine.storage.rollbackRecords?.generationMirror(keychainID: engine.keybag.keychainID, environment: engine.environment,
                                                                    device: engine.device, indexKey: indexKey)?.read()
    }
}
