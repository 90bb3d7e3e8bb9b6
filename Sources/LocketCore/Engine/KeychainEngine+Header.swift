import LocketSupport

/// Transactions, writes, the header's authentication and rollback detection (SPEC §7 "Rollback").
extension KeychainEngine {
    /// How many writes the keychain has committed (as this process last saw it);
    /// 0 for a keychain from before generations, until its first write.
    var generation: UInt64 { Header(meta: meta, keybag: [:]).generation }

    // MARK: - Transactions and writes

    /// Runs `body` in one transaction of the storage.
    func transaction<T>(write: Bool, _ body: () throws -> T) throws -> T {
        // The storage's call takes no generic result: through the existential
        // it would build T's metadata at run time in every command.
        var result: T?
        try storage.transaction(write: write) { result = try body() }
        return result!
    }

    /// Runs `body` in one write transaction, the only way the engine writes a
    /// keychain. Where the storage moves the header on at every write (or
    /// with `advancingHeader`), the header as it is now is authenticated and
    /// checked against the generation mirror before `body`, and after it the
    /// generation advances and the header is sealed again, in the same
    /// transaction; the mirror follows once the commit is on disk.
    ///
    /// `rekey` is the blind-index key the header is sealed with when `body`
    /// replaced it (a rotation). Fails with errSecInteractionNotAllowed when
    /// the blind-index key is not available (locked on a device that has not
    /// been unlocked yet, or whose device secret was lost).
    func write<T>(rekey: SecureBytes? = nil, advancingHeader: Bool? = nil, _ body: () throws -> T) throws -> T {
        // An older copy is never written before it is accepted: a write would
        // advance its generation toward the mirror's and launder the rollback.
        if isRolledBack { throw rolledBack(generation, seen: nil) }
        guard advancingHeader ?? storage.policy.advancesHeaderOnEveryWrite else { return try transaction(write: true, body) }
        let indexKey: SecureBytes
        do {
            indexKey = try self.indexKey()
        } catch let error as KeychainError {
            throw storage.layoutUpgrade?.writeRefused(error) ?? error
        }
        let id = keybag.keychainID
        var result: T?
        var written: Header?
        try storage.transaction(write: true) {
            let before = try storage.readHeader()
            try authenticate(before, indexKey: indexKey, settled: true)
            if isRolledBack { throw rolledBack(before.generation, seen: nil) }
            // The header as it is now is the truth the body works from (another process may have written since open).
            meta = before.meta
            try storage.layoutUpgrade?.willWrite(before, indexKey: indexKey)
            result = try body()
            var after = try storage.readHeader()
            let sealed = try after.sealed(generation: before.generation + 1, indexKey: rekey ?? indexKey, keychainID: id)
            for (name, value) in sealed { after.meta[name] = value }
            try storage.writeMeta(sealed)
            written = after
        }
        meta = written!.meta
        headerChecked = true
        if !isRolledBack { try generationMirror(indexKey: rekey ?? indexKey)?.raise(to: written!.generation) }
        return result!
    }

    // MARK: - Authentication

    /// Checks `header` with `indexKey`: its MAC (a header from before MACs
    /// passes as generation 0 where the storage allows it), then its
    /// generation against this machine's mirror. Altered: errSecDecode.
    /// Older than the mirror: errSecDecode with reason `.rolledBack`, unless
    /// the keychain was opened to accept it.
    ///
    /// `settled`: the header was read after this process loaded its keys, so
    /// a key check that differs means a rotation committed in between
    /// (`keysReplaced`); at open, keys and header come together and a
    /// difference means the header was altered.
    func authenticate(_ header: Header, indexKey: SecureBytes, settled: Bool = false) throws {
        let id = keybag.keychainID
        if header.isAuthenticated || storage.policy.requiresAuthenticatedHeader {
            // A header without a MAC where every header has one was stripped of it.
            guard header.isAuthenticated else { throw altered }
            // The MAC can't verify with keys from before a rotation: say which case it is.
            guard header.matches(indexKey: indexKey, keychainID: id) else { throw settled && rotates ? keysReplaced : altered }
            guard try header.verify(try Header.macKey(indexKey: indexKey, keychainID: id)) else { throw altered }
        }
        try checkRollback(header.generation, indexKey: indexKey)
        headerChecked = true
    }

    /// Whether another process may replace this keychain's keys while this one runs.
    private var rotates: Bool { capabilities.contains(.rotateKeys) }

    /// This process holds keys from before a rotation that another one committed.
    var keysReplaced: KeychainError {
        KeychainError(.interactionNotAllowed, "the keychain's keys were replaced while this command ran; nothing was changed",
                      reason: .keysReplaced)
    }

    private var altered: KeychainError {
        KeychainError(.decode, "\(path) has a header that does not authenticate; the \(storage.medium) was altered")
    }

    /// Inside a read transaction: fails with `keysReplaced` when the stored
    /// keys are no longer this process's (a rotation committed since open).
    /// Called where a read found nothing or could not open a value, so that
    /// such a race is never reported as a missing or damaged item.
    func checkKeysCurrent() throws {
        guard rotates, let indexKey = keys[Keybag.indexKeyName] else { return }
        guard let check = try storage.readMeta(Header.keyCheckName) else { return }
        let header = Header(meta: [Header.keyCheckName: check], keybag: [:])
        if !header.matches(indexKey: indexKey, keychainID: keybag.keychainID) { throw keysReplaced }
    }

    /// After a password opened `unwrapped`: authenticates the header with the
    /// blind-index key they gave before any of them is used (a wrap moved
    /// between rows, a substituted keybag or an older header is refused
    /// here, also where the header could not be checked at open), and keeps
    /// that key for the writes that follow.
    func authenticateWithPassword(_ unwrapped: SessionKeys) throws {
        guard let indexKey = unwrapped[Keybag.indexKeyName] else {
            guard !storage.policy.requiresAuthenticatedHeader else {
                throw KeychainError(.decode, "the keychain's header in \(path) has no blind-index key; the \(storage.medium) was altered")
            }
            return
        }
        try authenticate(header, indexKey: indexKey)
        if keys[Keybag.indexKeyName] == nil { keys.set(Keybag.indexKeyName, indexKey) }
    }

    /// Compares `generation` with the highest this machine has seen, and
    /// raises the mirror when the keychain is ahead (another device or
    /// process wrote it) or the mirror is missing (a new device).
    private func checkRollback(_ generation: UInt64, indexKey: SecureBytes) throws {
        let id = keybag.keychainID
        guard let mirror = try generationMirror(indexKey: indexKey) else { return }
        var seen = mirror.read()
        if generation > 0 && (seen ?? 0) < generation {
            // Under the mirror's lock: a concurrent writer may have raised it meanwhile.
            seen = mirror.raise(to: generation)
        }
        guard let seen, seen > generation else { return }
        // The mirror is raised only after a commit, so a header at least as
        // new as the mirror was just written by another process, not put back.
        var current: Header?
        try storage.transaction(write: false) { current = try storage.readHeader() }
        if let now = current, now.generation >= seen {
            guard now.matches(indexKey: indexKey, keychainID: id) else { throw rotates ? keysReplaced : altered }
            guard try now.verify(try Header.macKey(indexKey: indexKey, keychainID: id)) else { throw altered }
            return
        }
        if acceptsRollback {
            isRolledBack = true
            return
        }
        throw rolledBack(generation, seen: seen)
    }

    /// This keychain's generation mirror (nil where its storage keeps none)
    /// for `indexKey` and the device key held now. Kept while both are the
    /// same keys: its name and its key are derivations from the path, the
    /// identity and the device key, which a write's check before it and its
    /// raise after it (and every check of a keychain kept open) would
    /// otherwise make again. It holds the two keys it was made for, as the
    /// mirror holds a key derived from them, no longer than the engine lives.
    func generationMirror(indexKey: SecureBytes) throws -> GenerationMirror? {
        let id = keybag.keychainID
        if let made = madeMirror, made.indexKey === indexKey, made.device === device, made.keychainID == id { return made.mirror }
        let mirror = try storage.rollbackRecords?.generationMirror(keychainID: id, environment: environment, device: device, indexKey: indexKey)
        madeMirror = MadeMirror(indexKey: indexKey, device: device, keychainID: id, mirror: mirror)
        return mirror
    }

    /// A generation mirror and what it was made for.
    struct MadeMirror {
        let indexKey: SecureBytes
        let device: SecureBytes?
        let keychainID: [UInt8]
        let mirror: GenerationMirror?
    }

    func rolledBack(_ generation: UInt64, seen: UInt64?) -> KeychainError {
        let than = seen.map { "than this device has seen (generation \($0))" } ?? "than this device has seen"
        return KeychainError(.decode, "\(path) was rolled back: it is an older copy (generation \(generation)) \(than)", reason: .rolledBack)
    }

    /// Refuses Argon2id parameters below INTERACTIVE where the header could
    /// not be authenticated before hashing (a copy on another device, a lost
    /// device secret, a header from before MACs): locket never writes such
    /// parameters, so the header was edited. Where the header authenticated,
    /// any edit of the parameters has already failed it.
    func checkKDFParameters() throws {
        guard let kdf = keybag.kdf, !(headerChecked && meta[Header.macName] != nil) else { return }
        guard kdf.isStrong else {
            throw KeychainError(.decode, "\(path) has password-hash parameters below locket's minimum; the \(storage.medium) was altered")
        }
    }
}
