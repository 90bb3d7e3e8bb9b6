import LocketSupport

/// Writes, the header's authentication and rollback detection (SPEC §7 "Rollback").
extension Keychain {
    /// How many writes the keychain has committed (as this process last saw it);
    /// 0 for a keychain from before generations, until its first write.
    public var generation: UInt64 { Header(meta: meta, keybag: [:]).generation }

    // MARK: - Writes

    /// Runs `body` in one write transaction, the only way the engine writes a
    /// keychain: before `body`, the header as it is now in the file is
    /// authenticated and checked against the generation mirror; after it,
    /// the generation advances and the header is sealed again, in the same
    /// transaction. The mirror follows once the commit is on disk.
    ///
    /// `rekey` is the blind-index key the header is sealed with when `body`
    /// replaced it (a rotation). Fails with errSecInteractionNotAllowed when
    /// the blind-index key is not available (locked on a device that has not
    /// been unlocked yet, or whose device secret was lost).
    func write<T>(rekey: SecureBytes? = nil, _ body: () throws -> T) throws -> T {
        // An older copy is never written before it is accepted: a write would
        // advance its generation toward the mirror's and launder the rollback.
        if isRolledBack { throw rolledBack(generation, seen: nil) }
        // A remote keychain has no file header to seal: its transaction is the server's.
        if let remote { return try remote.transaction { _ in try body() } }
        let indexKey: SecureBytes
        do {
            indexKey = try self.indexKey()
        } catch let error as KeychainError where format < Schema.format {
            throw KeychainError(error.code, "\(path) is a keychain of format \(format); upgrading it to format \(Schema.format) needs its keys",
                                reason: .upgradeNeedsUnlock)
        }
        let id = keybag.keychainID
        let formatBefore = format
        defer { if meta.integer(.format) != format { format = formatBefore } }
        let (result, written) = try database.transaction(write: true) { () throws -> (T, Header) in
            let before = try MetaStore.read(database)
            try authenticate(before, indexKey: indexKey, settled: true)
            if isRolledBack { throw rolledBack(before.generation, seen: nil) }
            // Another process may have migrated the file since it was opened.
            format = before.meta.integer(.format) ?? format
            if format < Schema.format && migratesOnWrite { try migrate(indexKey: indexKey) }
            let result = try body()
            var after = try MetaStore.read(database)
            for (name, value) in try after.sealed(generation: before.generation + 1, indexKey: rekey ?? indexKey, keychainID: id) {
                after.meta[name] = value
            }
            try MetaStore.write(database, named: after.meta.filter { [Header.generationName, Header.keyCheckName, Header.macName].contains($0.key) }
                .map { ($0.key, $0.value) })
            return (result, after)
        }
        meta = written.meta
        headerChecked = true
        if let device, !isRolledBack {
            try GenerationMirror(environment: environment, keychainID: id, keychainPath: path, device: device).raise(to: written.generation)
        }
        return result
    }

    /// Format 1 -> 2 (SPEC §7), inside `write`'s transaction: the new format
    /// is sealed into the header with the rest, and a kill before the commit
    /// leaves the file as it was. Needs the blind-index key for the digest of
    /// the empty value; everything else moves by SQL without opening a value.
    private func migrate(indexKey: SecureBytes) throws {
        try ItemStore.migrateToFormat2(database) { Sealing.indexDigest(indexKey, $0, $1, []) }
        try MetaStore.write(database, [(.format, BigEndian.bytes(Schema.format))])
        format = Schema.format
    }

    /// Inside a read transaction on a file that was of format 1 at open:
    /// another process may have migrated it since (a format-2 file is never
    /// turned back, so nothing is read once it is current).
    func refreshFormat() throws {
        guard format < Schema.format, let encoded = try MetaStore.value(database, .format), encoded.count == 8 else { return }
        format = BigEndian.int64(encoded)
    }

    // MARK: - Authentication

    /// Checks `header` with `indexKey`: its MAC (a header from before MACs
    /// passes as generation 0), then its generation against this device's
    /// mirror. Altered: errSecDecode. Older than the mirror: errSecDecode
    /// with reason `.rolledBack`, unless the keychain was opened to accept it.
    ///
    /// `settled`: the header was read after this process loaded its keys, so
    /// a key check that differs means a rotation committed in between
    /// (`keysReplaced`); at open, keys and header come together and a
    /// difference means the file was altered.
    func authenticate(_ header: Header, indexKey: SecureBytes, settled: Bool = false) throws {
        let id = keybag.keychainID
        if header.isAuthenticated {
            // The MAC can't verify with keys from before a rotation: say which case it is.
            guard header.matches(indexKey: indexKey, keychainID: id) else { throw settled ? keysReplaced : altered }
            guard try header.verify(try Header.macKey(indexKey: indexKey, keychainID: id)) else { throw altered }
        }
        try checkRollback(header.generation, indexKey: indexKey)
        headerChecked = true
    }

    /// This process holds keys from before a rotation that another one committed.
    var keysReplaced: KeychainError {
        KeychainError(.interactionNotAllowed, "the keychain's keys were replaced while this command ran; nothing was changed",
                      reason: .keysReplaced)
    }

    private var altered: KeychainError {
        KeychainError(.decode, "\(path) has a header that does not authenticate; the file was altered")
    }

    /// Inside a read transaction: fails with `keysReplaced` when the file's
    /// keys are no longer this process's (a rotation committed since open).
    /// Called where a read found nothing or could not open a value, so that
    /// such a race is never reported as a missing or damaged item.
    func checkKeysCurrent() throws {
        guard let indexKey = keys[Keybag.indexKeyName], remote == nil else { return }
        guard let check = try MetaStore.value(database, .keyCheck) else { return }
        let header = Header(meta: [Header.keyCheckName: check], keybag: [:])
        if !header.matches(indexKey: indexKey, keychainID: keybag.keychainID) { throw keysReplaced }
    }

    /// After a password opened the keys: authenticates the header now if the
    /// blind-index key was not available at open (another device, a lost
    /// device secret), and keeps that key for the writes that follow.
    func authenticateWithPassword(_ unwrapped: SessionKeys) throws {
        guard let indexKey = unwrapped[Keybag.indexKeyName] else { return }
        if !headerChecked { try authenticate(Header(meta: meta, keybag: keybag.rows), indexKey: indexKey) }
        if keys[Keybag.indexKeyName] == nil { keys.set(Keybag.indexKeyName, indexKey) }
    }

    /// Compares `generation` with the highest this device has seen, and
    /// raises the mirror when the keychain is ahead (another device or
    /// process wrote it) or the mirror is missing (a new device).
    private func checkRollback(_ generation: UInt64, indexKey: SecureBytes) throws {
        guard let device else { return }
        let mirror = try GenerationMirror(environment: environment, keychainID: keybag.keychainID, keychainPath: path, device: device)
        var seen = mirror.read()
        if generation > 0 && (seen ?? 0) < generation {
            // Under the mirror's lock: a concurrent writer may have raised it meanwhile.
            seen = mirror.raise(to: generation)
        }
        guard let seen, seen > generation else { return }
        // The mirror is raised only after a commit, so a file at least as new
        // as the mirror was just written by another process, not put back.
        let now = try database.reading { try MetaStore.read(database) }
        if now.generation >= seen {
            guard now.matches(indexKey: indexKey, keychainID: keybag.keychainID) else { throw keysReplaced }
            guard try now.verify(try Header.macKey(indexKey: indexKey, keychainID: keybag.keychainID)) else { throw altered }
            return
        }
        if acceptsRollback {
            isRolledBack = true
            return
        }
        throw rolledBack(generation, seen: seen)
    }

    func rolledBack(_ generation: UInt64, seen: UInt64?) -> KeychainError {
        let than = seen.map { "than this device has seen (generation \($0))" } ?? "than this device has seen"
        return KeychainError(.decode, "\(path) was rolled back: it is an older copy (generation \(generation)) \(than)", reason: .rolledBack)
    }

    /// Refuses Argon2id parameters below INTERACTIVE where the header could
    /// not be authenticated before hashing (a copy on another device, a lost
    /// device secret, a header from before MACs): locket never writes such
    /// parameters, so the file was edited. Where the header authenticated,
    /// any edit of the parameters has already failed it.
    func checkKDFParameters() throws {
        guard let kdf = keybag.kdf, !(headerChecked && meta[Header.macName] != nil) else { return }
        guard kdf.isStrong else {
            throw KeychainError(.decode, "\(path) has password-hash parameters below locket's minimum; the file was altered")
        }
    }

    // MARK: - Accepting a rollback

    /// Accepts the keychain as it is (SPEC §7): the device's generation
    /// mirror is set to the keychain's own, so that an older copy put back on
    /// purpose opens again. The owner's act; with a password, only with it
    /// (counted as unlock counts). Returns whether the keychain was rolled
    /// back; if it was, the session is cleared, since its keys may be newer
    /// than the file's. The password given then unlocks it, as `unlock`
    /// with the default timeout would, so the next command does not ask again.
    @discardableResult
    public func acceptRollback(password: SecureBytes?) throws -> Bool {
        try requireOwner("accepting an older copy of the keychain")
        if remote != nil {
            let accepted = try acceptRemoteRollback(password: password)
            if let password { try unlockRemote(password: password, timeout: nil) }
            return accepted
        }
        var checked: (kek: SecureBytes, keys: SessionKeys)?
        if hasPassword {
            guard let password else { throw KeychainError(.authFailed) }
            checked = try checkPassword(password)
        }
        var accepted = false
        if isRolledBack, let device {
            let current = try database.reading { try MetaStore.read(database) }.generation
            try GenerationMirror(environment: environment, keychainID: keybag.keychainID, keychainPath: path, device: device).set(current)
            lock(all: true)
            isRolledBack = false
            accepted = true
        }
        if let checked { try unlock(checked: checked, timeout: nil) }
        return accepted
    }
}
