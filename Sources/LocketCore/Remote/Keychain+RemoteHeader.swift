import LocketSupport

/// The header of a remote keychain (SPEC §7 "Rollback", docs/REMOTE.md
/// "Integrity of the header"): its meta rows (format, identity, password-hash
/// parameters, the `keybag.*` wraps) carry a MAC and a generation, as a
/// file's header does. The MAC's key derives from the blind-index key, which
/// a remote keychain wraps only with the password's KEK: the server never
/// holds it, so it can neither forge a header nor move a wrap from one row
/// to another. The generation advances when the header or the group keys
/// are replaced (`revoke`), and each machine remembers the highest it has
/// seen (`GenerationMirror`, per URL), so a server that puts back an older
/// header is refused with the errSecDecode a file gets.
///
/// The header is checked wherever the blind-index key is at hand: at open
/// when the session holds it, at `unlock` before any key reaches the
/// session. Without it nothing can be looked up or opened.
extension Keychain {
    /// Meta rows outside the header: the schema version belongs to the
    /// database (a newer locket upgrades it), not to the keychain.
    static let remoteUnauthenticatedMeta: Set<String> = ["schema"]

    /// The header of the meta rows `stored` (keybag rows included) as read from the database.
    static func remoteHeader(_ stored: [String: [UInt8]]) -> Header {
        Header(meta: stored.filter { !remoteUnauthenticatedMeta.contains($0.key) }, keybag: [:])
    }

    /// This process's view of the header: the meta and keybag rows read at open.
    var remoteHeader: Header {
        var rows = meta
        for (name, value) in keybag.remoteMeta { rows[name] = value }
        return Keychain.remoteHeader(rows)
    }

    /// Checks a remote keychain's `header` with `indexKey`: its key check and
    /// MAC (missing or wrong: errSecDecode, the database was altered), then its
    /// generation against this machine's mirror (older: errSecDecode, reason
    /// `.rolledBack`, unless the keychain was opened to accept it).
    func authenticateRemote(_ header: Header, indexKey: SecureBytes) throws {
        guard let remote else { return }
        let id = keybag.keychainID
        // A header without a MAC is refused, not taken as unauthenticated: every
        // remote keychain was made with one, and a server could strip it.
        guard header.isAuthenticated, header.matches(indexKey: indexKey, keychainID: id),
              try header.verify(try Header.macKey(indexKey: indexKey, keychainID: id)) else {
            throw KeychainError(.decode, "the keychain's header in \(remote.location.url) does not authenticate; the database was altered")
        }
        let mirror = try remoteMirror(indexKey: indexKey)
        var seen = mirror.read()
        if (seen ?? 0) < header.generation { seen = mirror.raise(to: header.generation) }
        if let seen, seen > header.generation {
            // Another process of this machine may have committed a newer header
            // since this one was read (the mirror follows a commit): look again.
            let now = Keychain.remoteHeader(try remote.transaction { try remote.readMeta($0) })
            let current = try now.isAuthenticated && now.matches(indexKey: indexKey, keychainID: id)
                && now.verify(Header.macKey(indexKey: indexKey, keychainID: id))
            if !(current && now.generation >= seen) {
                guard acceptsRollback else { throw rolledBack(header.generation, seen: seen) }
                isRolledBack = true
            }
        }
        headerChecked = true
    }

    /// This machine's record of the highest header generation seen at this URL.
    func remoteMirror(indexKey: SecureBytes) throws -> GenerationMirror {
        let key = try KeyDerivation.derive(indexKey, KeyDerivation.Context("locket.remote.generation-mirror.v1").with(keybag.keychainID))
        return try GenerationMirror(environment: environment, keychainID: keybag.keychainID, remoteURL: remote?.location.url ?? path, key: key)
    }

    /// Inside the open transaction: reads and checks the header as it is now,
    /// and writes it back at the next generation with a new MAC. Returns the
    /// new generation, which the caller gives `raiseRemoteMirror` once committed.
    func advanceRemoteHeader(_ remote: RemoteStore, _ transaction: RemoteConnection.Transaction) throws -> UInt64 {
        let indexKey = try self.indexKey()
        let before = Keychain.remoteHeader(try remote.readMeta(transaction))
        try authenticateRemote(before, indexKey: indexKey)
        if isRolledBack { throw rolledBack(before.generation, seen: nil) }
        let generation = before.generation + 1
        try remote.writeMeta(before.sealed(generation: generation, indexKey: indexKey, keychainID: keybag.keychainID))
        return generation
    }

    /// After the commit of a header written at `generation`.
    func raiseRemoteMirror(to generation: UInt64) throws {
        try remoteMirror(indexKey: try indexKey()).raise(to: generation)
        meta[.generation] = BigEndian.bytes(Int64(bitPattern: generation))
    }

    /// `restore --accept-rollback` on a remote keychain: the password proves
    /// the owner, the header must still authenticate (an older header is
    /// accepted, a forged one never), and this machine's mirror is set to its
    /// generation. The session is cleared, as for a file.
    func acceptRemoteRollback(password: SecureBytes?) throws -> Bool {
        guard let password else { throw KeychainError(.authFailed) }
        try checkKDFParameters()
        let unwrapped = try keybag.unwrapWithKEK(try keybag.kek(password: password), device: nil)
        guard let indexKey = unwrapped[Keybag.indexKeyName] else {
            throw KeychainError(.decode, "the keychain's header in \(path) has no blind-index key; the database was altered")
        }
        acceptsRollback = true
        isRolledBack = false
        try authenticateRemote(remoteHeader, indexKey: indexKey)
        guard isRolledBack else { return false }
        try remoteMirror(indexKey: indexKey).set(remoteHeader.generation)
        lock(all: true)
        return true
    }
}
