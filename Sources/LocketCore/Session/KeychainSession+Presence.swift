import LocketSupport

/// Proofs of presence (SPEC §14): the keychain password proven for items
/// with access control, the application password, and the reuse window.
extension KeychainSession {
    /// The longest `settings --presence-reuse` allows, in seconds (LAContext's maximum).
    public static let maximumPresenceReuse: UInt32 = 300

    /// The application password for items that need one (set by the caller
    /// after a `.proofNeeded` that asked for it, or before an add).
    public var applicationPassword: SecureBytes? {
        get { engine.proof.applicationPassword }
        nonmutating set { engine.proof.applicationPassword = newValue }
    }

    /// An identity of the caller's terminal session (the command line builds
    /// it from the terminal device, the session id and the session leader's
    /// start time). Only with it does a proof serve later commands.
    public var terminalSession: String? {
        get { engine.proof.terminalSession }
        nonmutating set {
            engine.proof.terminalSession = newValue
            engine.proof.reuseLoaded = false
        }
    }

    /// Seconds one proof of presence serves the same terminal session (0: none).
    public var presenceReuse: UInt32 { engine.presenceReuse }

    /// Stores the reuse window (0 ... 300 seconds). Shortening it is always
    /// allowed; lengthening it needs the keychain password proven in this
    /// process (`provePresence`): errSecInteractionNotAllowed with
    /// `.proofNeeded` without it, errSecNotAvailable on a keychain without a
    /// password, which has no proof to give.
    public func setPresenceReuse(_ seconds: UInt32) throws {
        try engine.requireOwner("changing settings")
        guard seconds <= KeychainSession.maximumPresenceReuse else {
            throw KeychainError(.param, "the presence reuse window is at most \(KeychainSession.maximumPresenceReuse) seconds")
        }
        try engine.require(.settings)
        try engine.write {
            // A wider window is a weaker policy: a process that could set it
            // without the password would widen it and wait for the user's
            // next proof. Compared with the stored value, not the one read at open.
            let stored = try engine.storage.readMeta(.presenceReuse).flatMap { $0.count == 8 ? BigEndian.int64($0) : nil } ?? 0
            if Int64(seconds) > stored && !engine.proof.passwordProven {
                guard engine.hasPassword else {
                    throw KeychainError(.notAvailable, "the presence reuse window serves user presence, which needs a keychain with a password")
                }
                throw engine.proofNeeded(password: true, application: false, label: nil)
            }
            try engine.storage.writeMeta([(.presenceReuse, BigEndian.bytes(Int64(seconds)))])
        }
    }

    /// Proves presence with the keychain password: checked as every password
    /// is (counted, slowed after failures), then the presence keys are opened
    /// for this process, and kept for the reuse window when there is one. A
    /// keychain made before access control gets its presence keys here.
    public func provePresence(password: SecureBytes) throws {
        guard engine.hasPassword else {
            throw KeychainError(.notAvailable, "user presence needs a keychain with a password")
        }
        let kek = try checkPassword(password).kek
        engine.proof.passwordProven = true
        var bag = engine.keybag
        var missing: [(MetaKey, [UInt8])] = []
        for name in PresenceKeys.names {
            // A row that does not open with the right password was left wrapped for an older one (a
            // release before access control changed the password): its items can't open any more either.
            if let key = try? bag.unwrapPresence(name, kek: kek) {
                engine.proof.presenceKeys[name] = key
                continue
            }
            let (publicKey, secretKey) = try PresenceKeys.generate()
            try bag.wrapPresence(name, secretKey, kek: kek)
            missing.append((PresenceKeys.publicKeyRow(name), publicKey))
            engine.proof.presenceKeys[name] = secretKey
        }
        if !missing.isEmpty {
            // Where the header moves on only when keys are replaced, the presence keys come at init, with the header they belong to.
            try engine.require(.addMissingKeys)
            try engine.write {
                try engine.storage.writeKeybag(bag, replacingAll: false)
                try engine.storage.writeMeta(missing)
            }
            engine.keybag = bag
        }
        try engine.keepForReuse()
    }
}
