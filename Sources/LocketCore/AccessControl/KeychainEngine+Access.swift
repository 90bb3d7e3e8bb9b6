import LocketSupport

/// The proofs an item with access control needs (SPEC §14), given by the
/// caller, kept for this process only.
struct ProofState {
    /// Presence secret keys opened with the keychain password (or found in
    /// this terminal session's reuse window), by keybag name.
    var presenceKeys: [String: SecureBytes] = [:]
    /// The application password for the items being read or added.
    var applicationPassword: SecureBytes?
    /// The caller's terminal session, when it has one (for the reuse window).
    var terminalSession: String?
    /// Whether the keychain password was checked in this process
    /// (`provePresence`), not merely found in a reuse window.
    var passwordProven = false
    /// Whether the reuse window was looked at already.
    var reuseLoaded = false
}

/// Access control (SPEC §14): sealing an item's secret behind the proofs
/// its access control names, opening it with the proofs given, and the
/// reuse window that lets one proof serve a terminal session.
extension KeychainEngine {
    /// Seconds one proof of presence serves the same terminal session (0: none).
    var presenceReuse: UInt32 {
        guard let stored = meta[.presenceReuse], stored.count == 8 else { return 0 }
        return UInt32(clamping: min(BigEndian.int64(stored), Int64(KeychainSession.maximumPresenceReuse)))
    }

    // MARK: - Sealing

    /// A new access record for an item's secret and the key that seals it;
    /// inside the add's (or update's) write transaction. Sealing to a presence
    /// key needs only its public key; an application password must be given.
    /// `publicHalf`: a private key's public key, kept in the record outside the proof.
    /// `tpmAuthorization`: a Secure Enclave key, whose application password the TPM checks.
    func sealAccess(_ control: AccessControl, _ row: Sealing.RowIdentity, label: String?,
                    publicHalf: [UInt8]? = nil, tpmAuthorization: Bool = false) throws -> (ItemAccess, SecureBytes) {
        var publicKey: [UInt8]?
        if let name = control.presenceKeyName {
            guard hasPassword else {
                throw KeychainError(.notAvailable, "\(control.text) items need a keychain with a password")
            }
            // As read at open, or by the write this runs in (a keychain from before access control gets them at a first proof).
            publicKey = meta[PresenceKeys.publicKeyRow(name)]
            // A keychain from before access control: its keys are made with the password.
            guard publicKey?.count == 32 else { throw proofNeeded(password: true, application: false, label: label) }
        }
        var applicationKey: SecureBytes?
        let (access, itemSecret) = try ItemAccess.make(control, publicKey: publicKey, publicHalf: publicHalf, tpmAuthorization: tpmAuthorization)
        if let kdf = access.applicationKDF {
            guard let password = proof.applicationPassword else { throw proofNeeded(password: false, application: true, label: label) }
            applicationKey = try PasswordHash.deriveKEK(password: password, parameters: kdf)
        }
        return (access, try ItemAccess.dataKey(itemSecret: itemSecret, row, applicationKey: applicationKey))
    }

    // MARK: - Opening

    /// Whether an item's secret can never open again: sealed to a presence
    /// key the keychain no longer has (password-current-set after a password
    /// change; either after the password was removed).
    func isInvalidated(_ access: ItemAccess) -> Bool {
        guard let name = access.control.presenceKeyName else { return false }
        return meta[PresenceKeys.publicKeyRow(name)] != access.publicKey
    }

    /// The key of an item's sealed secret, or what proof is missing.
    func openAccess(_ access: ItemAccess, _ row: Sealing.RowIdentity, label: String?) throws -> SecureBytes {
        if isInvalidated(access) {
            throw KeychainError(.authFailed, "the item was bound to an earlier keychain password (\(access.control.text)); "
                                + "its secret can't be read any more", reason: .accessInvalidated)
        }
        var applicationKey: SecureBytes?
        // A Secure Enclave key's application password is asked for here and checked by the TPM at its use.
        if access.needsApplicationPassword && proof.applicationPassword == nil {
            throw proofNeeded(password: try access.control.needsPresence && presenceKey(access) == nil, application: true, label: label)
        }
        if let kdf = access.applicationKDF, let password = proof.applicationPassword {
            applicationKey = try PasswordHash.deriveKEK(password: password, parameters: kdf)
        }
        let itemSecret: SecureBytes
        if access.control.needsPresence {
            guard let secretKey = try presenceKey(access), let publicKey = access.publicKey else {
                throw proofNeeded(password: true, application: access.needsApplicationPassword && proof.applicationPassword == nil, label: label)
            }
            itemSecret = try PresenceKeys.open(access.secret, publicKey: publicKey, secretKey: secretKey)
        } else {
            itemSecret = try SecureBytes(copying: access.secret)
        }
        return try ItemAccess.dataKey(itemSecret: itemSecret, row, applicationKey: applicationKey)
    }

    /// The presence secret key an item needs, from a proof or the reuse window.
    private func presenceKey(_ access: ItemAccess) throws -> SecureBytes? {
        guard let name = access.control.presenceKeyName else { return nil }
        if proof.presenceKeys[name] == nil { try loadReused() }
        return proof.presenceKeys[name]
    }

    /// An item's label for a prompt, nil when it has none.
    static func label(_ attributes: [Attribute: [UInt8]]) -> String? {
        attributes[.label].map { String(decoding: $0, as: UTF8.self) }
    }

    func proofNeeded(password: Bool, application: Bool, label: String?) -> KeychainError {
        let what = [password ? "the keychain password" : nil, application ? "the application password" : nil].compactMap { $0 }
        return KeychainError(.interactionNotAllowed, "the item's access control needs \(what.joined(separator: " and "))",
                             reason: .proofNeeded(AccessRequest(keychainPassword: password, applicationPassword: application, label: label)))
    }

    // MARK: - Reuse window

    /// The session-store slot of this terminal session's proof: a keyed
    /// digest, so the slot's name tells nothing about the terminal.
    private var reuseSlot: String? {
        guard let terminal = proof.terminalSession else { return nil }
        return "p" + Hex.encode(KeyDerivation.digest(id: keybag.keychainID,
                                                     KeyDerivation.Context("locket.presence.reuse.v1").with(terminal)))
    }

    /// Keeps the proven presence keys in the session store for the reuse
    /// window, under this terminal session's slot, expiring with it. They are
    /// stored masked under the when-unlocked session's reuse nonce, made anew
    /// at every unlock, so the slot is no proof in the clear and stops
    /// serving at `lock`.
    func keepForReuse() throws {
        let seconds = presenceReuse
        guard seconds > 0, let slot = reuseSlot, let nonce = keys[PresenceKeys.reuseNonceName] else { return }
        var stored = SessionKeys()
        for (name, key) in proof.presenceKeys { stored.set(name, try KeychainEngine.mask(key, nonce, slot: slot, name: name)) }
        try session.saveSlot(slot, keys: stored, expiresAfter: seconds)
    }

    /// Takes the presence keys of this terminal session's reuse window, if one is open.
    private func loadReused() throws {
        guard !proof.reuseLoaded, presenceReuse > 0, let slot = reuseSlot,
              let nonce = keys[PresenceKeys.reuseNonceName] else { return }
        proof.reuseLoaded = true
        guard let stored = session.loadSlot(slot) else { return }
        for (name, key) in stored.entries where PresenceKeys.names.contains(name) && proof.presenceKeys[name] == nil {
            // Masked under an earlier unlock's nonce it unmasks to noise: kept only if it is the keychain's key.
            let unmasked = try KeychainEngine.mask(key, nonce, slot: slot, name: name)
            if let publicKey = try? BackupRecipients.publicKey(secretKey: unmasked), publicKey == meta[PresenceKeys.publicKeyRow(name)] {
                proof.presenceKeys[name] = unmasked
            }
        }
    }

    /// `key` XOR a mask derived from the reuse nonce for this slot and name (its own inverse).
    private static func mask(_ key: SecureBytes, _ nonce: SecureBytes, slot: String, name: String) throws -> SecureBytes {
        let pad = try KeyDerivation.derive(nonce, KeyDerivation.Context("locket.presence.mask.v1").with(slot).with(name))
        let out = try SecureBytes(count: key.count)
        out.withUnsafeMutableBytes { o in
            key.withUnsafeBytes { k in pad.withUnsafeBytes { p in for i in 0..<o.count { o[i] = k[i] ^ p[i % p.count] } } }
        }
        return out
    }
}
