import LocketSupport

/// A keychain: its items, as SecItem gives them (add, search, update,
/// delete, import), wherever the keychain lives (`KeychainStorage`; each
/// kind of place is a folder under Backends/). Its other roles are types
/// of their own: the session (`session`: unlock, lock, passwords, status,
/// settings, proofs) and keys (`keys`: key files, generated keys,
/// certificates, identities, key use). Never prints, never exits; every
/// failure is a KeychainError.
///
/// Where the items' operations live: Keychain+Add, +Search (and dump,
/// matching), +Update (and delete), +Import, +InProcess (held searches),
/// +OneTimeCode; opening a file, Backends/File/Keychain+File. What they
/// share with the other roles is `KeychainEngine`.
public final class Keychain {
    let engine: KeychainEngine

    init(engine: KeychainEngine) { self.engine = engine }

    /// Opens `storage`, whose header it has read (`stored`), for `caller`:
    /// the one opening every kind of storage goes through (`KeychainEngine.open`).
    /// Inlined into each backend's `open`, as the opening was before the
    /// engine had roles: called through a function of its own, the copy of
    /// the keybag went through value witnesses and built their metadata at
    /// run time in every command (callgrind, issue 38).
    @inline(__always)
    package convenience init(opening storage: any KeychainStorage, _ stored: StoredHeader, caller: Caller, environment: Environment,
                     extendSession: Bool, acceptRollback: Bool) throws {
        self.init(engine: try KeychainEngine.open(storage, stored, caller: caller, environment: environment,
                                                  extendSession: extendSession, acceptRollback: acceptRollback))
    }

    /// Creates a keychain in `place` (the one `init` of every kind of
    /// storage, `KeychainEngine.create`): with `password` (nil: none, where
    /// the place allows it) hashed at `kdf`; with a password it starts unlocked.
    package static func create(in place: some KeychainPlace, password: SecureBytes?, kdf cost: KDFCost, environment: Environment,
                               sessionTimeout: UInt32? = nil, tpm: Bool = false) throws {
        try KeychainEngine.create(in: place, password: password, kdf: cost, environment: environment, sessionTimeout: sessionTimeout, tpm: tpm)
    }

    /// What the engine lends a storage's own administration (`KeychainGrant`).
    package var grant: KeychainGrant { KeychainGrant(engine) }

    /// The session: unlock, lock, passwords, status, settings, proofs of presence.
    public var session: KeychainSession { KeychainSession(engine) }

    /// Keys and certificates: key files, generated keys, identities, key use.
    public var keys: KeychainKeys { KeychainKeys(engine) }

    /// Where the keychain is: its file's path, or its URL.
    public var path: String { engine.path }

    /// Who is calling (the owner, or an app with its entitlements), given to `open`.
    public var caller: Caller { engine.caller }

    /// Whether the keychain has a password (a keychain without one is always unlocked).
    public var hasPassword: Bool { engine.hasPassword }

    /// The keychain's random identity, which keys its session.
    public var identity: String { Hex.encode(engine.keybag.keychainID) }

    /// How many writes the keychain has committed (as this process last saw it);
    /// 0 for a keychain from before generations, until its first write.
    public var generation: UInt64 { engine.generation }

    /// Whether the keychain was found to be older than this device has seen
    /// (opened with `acceptRollback`; `session.acceptRollback` accepts it).
    public var isRolledBack: Bool { engine.isRolledBack }

    /// The group `add` uses when none is given.
    public var defaultGroup: String { engine.defaultGroup }

    /// What this keychain allows.
    public var capabilities: Capabilities { engine.capabilities }

    /// Operations a keychain allows (`KeychainCapabilities`).
    public typealias Capabilities = KeychainCapabilities

    /// Refuses `capability` when the keychain lacks it (errSecNotAvailable),
    /// before anything is read or written; a caller may ask before its prompts.
    public func require(_ capability: Capabilities) throws { try engine.require(capability) }

    /// Lets go of what the keychain holds between calls (a file's lock),
    /// until the next call that reads or writes it. Every call lets go when
    /// it is done; this is for a `keepsFileOpen` opening that is not
    /// followed by a call at once.
    public func releaseFile() { engine.storage.hold?.release() }

    /// The access group `add` uses when none is given, for the owner.
    public static let defaultAccessGroup = "default"
    /// The largest secret accepted, in bytes (errSecDataTooLarge above it).
    public static let maximumDataLength = 16 * 1024 * 1024
    /// The longest access group accepted, in bytes (a backup record's field holds no more).
    public static let maximumGroupLength = 65_535
}
