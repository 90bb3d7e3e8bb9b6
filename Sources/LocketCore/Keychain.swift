import Glibc
import LocketSupport

/// A keychain file: the SecItem-like facade over the store, the keybag and
/// the session. Never prints, never exits; every failure is a KeychainError.
public final class Keychain {
    /// The keychain file.
    public let path: String
    let database: Database
    let environment: Environment
    var keybag: Keybag
    let session: SessionStore
    /// Keys available to this process, by class code (and `idx`).
    var keys = SessionKeys()
    /// Whether loading the session counts as a use (status only looks).
    var extendsSession = true
    /// Tiers whose session was found (or that need none).
    var unlockedTiers: Set<ProtectionClass.Tier> = [.always]
    private var groupKeys: [String: SecureBytes] = [:]
    private var lastGroupKey: (pclass: ProtectionClass, group: String, key: SecureBytes)?
    /// The meta table as read at open (and as this process last wrote it).
    var meta: [String: [UInt8]]
    /// The device key, or nil when the device secret is missing.
    var device: SecureBytes?
    /// Whether the header has been authenticated and checked against the
    /// generation mirror (at open when the blind-index key opens while
    /// locked, else once the password has given it).
    var headerChecked = false
    /// Set by `open(..., acceptRollback: true)`: a rolled-back keychain opens
    /// (with `isRolledBack` set) instead of failing.
    var acceptsRollback = false
    /// Whether the keychain was found to be older than this device has seen.
    public internal(set) var isRolledBack = false
    /// Who is calling; set by the CLI from `-e`/`LOCKET_ENTITLEMENTS`.
    public var caller: Caller = .owner
    /// Set when the session was unlocked for an app: it holds only that
    /// app's (class, group) keys, never class keys.
    var sessionScope: Scope?

    struct Scope: Equatable {
        var groups: [String]
        var classes: Set<String>
    }

    /// The access group `add` uses when none is given, for the owner.
    public static let defaultAccessGroup = "default"
    /// The largest secret accepted, in bytes (errSecDataTooLarge above it).
    public static let maximumDataLength = 16 * 1024 * 1024

    private init(path: String, database: Database, environment: Environment, keybag: Keybag, meta: [String: [UInt8]]) throws {
        self.path = path
        self.meta = meta
        self.database = database
        self.environment = environment
        self.keybag = keybag
        self.session = try SessionStore(environment: environment, keychainID: keybag.keychainID)
    }

    /// Whether the keychain has a password (a keychain without one is always unlocked).
    public var hasPassword: Bool { keybag.hasPassword }

    /// The keychain's random identity, which keys its session.
    public var identity: String { Hex.encode(keybag.keychainID) }

    // MARK: - Creating and opening

    /// Creates a keychain at `path` with `password` (nil: no password),
    /// hashed with Argon2id at `kdf`. The caller chooses the cost: the command
    /// line never passes less than `.interactive`.
    public static func create(at path: String, password: SecureBytes?, kdf cost: KDFCost = .moderate,
                              environment: Environment) throws {
        try Sodium.ready()
        umask(0o077)
        if FileIO.exists(path) {
            throw KeychainError(.duplicateKeychain, "a keychain already exists at \(path)")
        }
        if let password, password.count == 0 {
            throw KeychainError(.param, "the password is empty", hint: "use --no-password for a keychain without one")
        }
        // Every variable the new keychain needs is read before anything is made.
        let devicePath = try environment.deviceSecretPath()
        _ = try SessionStore(environment: environment, keychainID: [])
        try FileIO.makeDirectories(FileIO.directory(of: path))
        // Judged as `open` will judge it: a keychain made where it cannot be opened helps no one.
        let shared = try FileIO.checkPrivateFile(path, what: "keychain")
        try DeviceKey.create(secretPath: devicePath)
        guard let device = try DeviceKey.load(secretPath: devicePath) else {
            throw KeychainError(.io, "cannot read the device secret \(devicePath)")
        }
        let id = Sodium.random(16)
        let kdf: KDFParameters? = password == nil ? nil : KDFParameters(cost: cost)
        let kek = password.map { try? PasswordHash.deriveKEK(password: $0, parameters: kdf!) } ?? Keybag.passwordlessKEK(id)
        guard let kek else { throw KeychainError(.io, "not enough memory for the password hash") }
        let (bag, keys) = Keybag.create(keychainID: id, kdf: kdf, kek: kek, device: device)

        // Claim the names SQLite will use beside the keychain before it exists.
        let claimed = shared ? try Database.claimCompanions(of: path) : []
        do {
            // Build the file in a private directory next to it and link it into
            // place, so a crash never leaves a half-made keychain at the real path,
            // and nobody else can plant or read a file SQLite uses meanwhile (a
            // predictable name in /tmp could be made first by another user).
            removeAbandonedInits(of: path)
            let workspace = try makeWorkspace(for: path)
            defer { removeWorkspace(workspace) }
            let temporary = workspace + "/keychain"
            do {
                let db = try Database(path: temporary, create: true)
                try db.execute("PRAGMA journal_mode=WAL")
                try db.transaction(write: true) {
                    for sql in Schema.statements { try db.execute(sql) }
                    try Keychain.writeMeta(db, [("format", BigEndian.bytes(Schema.format)), ("id", id),
                                                ("device_fp", Keybag.deviceFingerprint(device, keychainID: id))]
                        + (kdf.map { [("kdf", $0.encoded)] } ?? []))
                    try Keychain.writeKeybag(db, bag)
                    let header = try Header.read(db)
                    try Keychain.writeMeta(db, header.sealed(generation: 1, indexKey: keys[Keybag.indexKeyName]!, keychainID: id))
                }
            }
            guard link(temporary, path) == 0 else {
                if errno == EEXIST { throw KeychainError(.duplicateKeychain, "a keychain already exists at \(path)") }
                throw KeychainError(.io, "cannot create \(path): \(errnoText())")
            }
        } catch {
            for file in claimed { unlink(file) }
            throw error
        }
        GenerationMirror(environment: environment, keychainID: id, keychainPath: path, device: device).raise(to: 1)

        // The creator has just proven the password: start unlocked, as iOS does after setting a passcode.
        if password != nil {
            let keychain = try Keychain.open(at: path, environment: environment)
            try keychain.saveSession(keys, timeout: keychain.defaultTimeout)
        }
    }

    /// The private directory `init` builds a keychain in: `PATH.init.PID.XXXXXX`, mode 700.
    private static func makeWorkspace(for path: String) throws -> String {
        var template = Array("\(path).init.\(getpid()).XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw KeychainError(.io, "cannot create a directory next to \(path): \(errnoText())")
        }
        return String(cString: made)
    }

    private static func removeWorkspace(_ workspace: String) {
        for suffix in [""] + Database.companionSuffixes { unlink(workspace + "/keychain" + suffix) }
        rmdir(workspace)
    }

    /// Removes what a killed `init` left when that process is gone: its
    /// directory `PATH.init.PID.XXXXXX`, or the files `PATH.init.PID[-wal|-shm]`
    /// of earlier versions. Only the user's own; others' names in a shared
    /// directory are left alone.
    private static func removeAbandonedInits(of path: String) {
        let directory = FileIO.directory(of: path)
        let prefix = String(path.split(separator: "/").last ?? "") + ".init."
        guard let dir = opendir(directory) else { return }
        var doomed: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            guard name.hasPrefix(prefix) else { continue }
            let pidText = name.dropFirst(prefix.count).prefix { $0.isNumber }
            if let pid = Int32(pidText), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH { doomed.append(name) }
        }
        closedir(dir)
        for name in doomed {
            let full = directory + "/" + name
            var st = stat()
            guard lstat(full, &st) == 0, st.st_uid == geteuid() else { continue }
            if st.st_mode & S_IFMT == S_IFDIR { removeWorkspace(full) } else { unlink(full) }
        }
    }

    /// Opens an existing keychain and loads whatever keys the session holds.
    /// A keychain older than this device has seen (put back from a copy) fails
    /// with errSecDecode (reason `.rolledBack`), unless `acceptRollback`: then
    /// it opens with `isRolledBack` set, for `acceptRollback(password:)`.
    public static func open(at path: String, environment: Environment, extendSession: Bool = true,
                            acceptRollback: Bool = false) throws -> Keychain {
        try Sodium.ready()
        umask(0o077)
        guard FileIO.exists(path) else {
            throw KeychainError(.noSuchKeychain, "no keychain at \(path)", hint: "run 'locket init' to create it")
        }
        if try FileIO.checkPrivateFile(path, what: "keychain") {
            try Database.claimCompanions(of: path)
        }
        let db = try Database(path: path, create: false)
        let (bag, meta) = try readKeybag(db, path: path)
        let keychain = try Keychain(path: path, database: db, environment: environment, keybag: bag, meta: meta)
        keychain.extendsSession = extendSession
        keychain.acceptsRollback = acceptRollback
        try keychain.loadKeys()
        if let indexKey = keychain.keys[Keybag.indexKeyName], !keychain.headerChecked {
            try keychain.authenticate(Header(meta: keychain.meta, keybag: keychain.keybag.rows), indexKey: indexKey)
        }
        return keychain
    }

    static func writeMeta(_ db: Database, _ values: [(String, [UInt8])]) throws {
        let stmt = try db.prepare("INSERT OR REPLACE INTO meta(name, value) VALUES (?, ?)")
        for (name, value) in values {
            stmt.reset()
            try stmt.bind(1, name)
            try stmt.bind(2, value)
            _ = try stmt.step()
        }
    }

    static func writeKeybag(_ db: Database, _ bag: Keybag) throws {
        let stmt = try db.prepare("INSERT OR REPLACE INTO keybag(class, kek, device) VALUES (?, ?, ?)")
        for (name, row) in bag.rows {
            stmt.reset()
            try stmt.bind(1, name)
            if let kek = row.kek { try stmt.bind(2, kek) } else { try stmt.bindNull(2) }
            if let device = row.device { try stmt.bind(3, device) } else { try stmt.bindNull(3) }
            _ = try stmt.step()
        }
    }

    private static func readKeybag(_ db: Database, path: String) throws -> (Keybag, [String: [UInt8]]) {
        let meta: [String: [UInt8]]
        let rows: [String: (kek: [UInt8]?, device: [UInt8]?)]
        do {
            let header = try Header.read(db)
            (meta, rows) = (header.meta, header.keybag)
        } catch let error as KeychainError where error.code == .io {
            // "no such table" and friends: a SQLite file, but not a keychain.
            throw KeychainError(.invalidKeychain, "\(path) is not a locket keychain")
        }
        guard let format = meta["format"], format == BigEndian.bytes(Schema.format) else {
            throw KeychainError(.invalidKeychain, "\(path) is not a locket keychain (or one of a newer format)")
        }
        guard let id = meta["id"], id.count == 16 else { throw KeychainError(.decode, "\(path) has a damaged header") }
        var kdf: KDFParameters?
        if let encoded = meta["kdf"] {
            guard let parameters = KDFParameters(encoded: encoded) else {
                throw KeychainError(.decode, "\(path) has damaged password-hash parameters")
            }
            kdf = parameters
        }
        return (Keybag(keychainID: id, kdf: kdf, rows: rows), meta)
    }

    // MARK: - Keys

    /// The device key, or nil when the device secret file is missing.
    func deviceKey() throws -> SecureBytes? {
        try DeviceKey.load(secretPath: environment.deviceSecretPath())
    }

    /// Loads the keys this process may use: the device-wrapped ones, then each
    /// session tier (or, without a password, everything).
    private func loadKeys() throws {
        defer { extendsSession = true }
        if device == nil { device = try deviceKey() }
        if let device { keys = keybag.unwrapWithDevice(device) }
        if !keybag.hasPassword {
            var all: SessionKeys
            do {
                all = try keybag.unwrapWithKEK(Keybag.passwordlessKEK(keybag.keychainID), device: device)
            } catch let error as KeychainError where error.code == .authFailed {
                // No password parameters, yet keys that need a password: the header was edited.
                throw KeychainError(.decode, "\(path) has lost its password-hash parameters; the file was altered")
            }
            if let device, !isBoundDevice(device) {
                // Writes below authenticate the header with the blind-index key.
                if let indexKey = all[Keybag.indexKeyName] { keys.set(Keybag.indexKeyName, indexKey) }
                try rebind(&all, kek: Keybag.passwordlessKEK(keybag.keychainID), device: device)
                try rewrapForThisDevice(all, device: device)
            }
            for (name, key) in all.entries { keys.set(name, key) }
            unlockedTiers = [.always, .whenUnlocked, .afterFirstUnlock]
            return
        }
        for tier in [ProtectionClass.Tier.afterFirstUnlock, .whenUnlocked] {
            let loaded: (SessionKeys, SessionStore.Info)?
            do {
                loaded = try session.load(tier, extend: extendsSession)
            } catch let error as KeychainError where error.code == .decode {
                // A damaged session (a crash mid-write, a race with lock, tampering)
                // is a locked one: forget it rather than block every command.
                session.remove(tier)
                loaded = nil
            }
            guard let (stored, _) = loaded else { continue }
            unlockedTiers.insert(tier)
            for (name, key) in stored.entries where keys[name] == nil { keys.set(name, key) }
            if let scope = stored.scope {
                sessionScope = (sessionScope ?? Scope(groups: [], classes: []))
                for group in scope.groups where !sessionScope!.groups.contains(group) { sessionScope!.groups.append(group) }
                sessionScope!.classes.formUnion(scope.classes)
            }
        }
    }

    /// The session key name of a scoped (class, group) key. Group names stay
    /// out of it so that their length never limits the session format.
    func scopedKeyName(_ pclass: ProtectionClass, _ group: String) -> String {
        let id = SecureBytes(copying: keybag.keychainID)
        return "g" + Hex.encode(KeyDerivation.digest(id, KeyDerivation.Context("locket.scoped.v1").with(pclass.rawValue).with(group)))
    }

    /// The blind-index key; without it nothing can be looked up.
    func indexKey() throws -> SecureBytes {
        guard let key = keys[Keybag.indexKeyName] else {
            throw KeychainError(.interactionNotAllowed, "the keychain is locked and its device secret is missing",
                                hint: "run 'locket unlock'")
        }
        return key
    }

    /// The key for items of `pclass` in `group`, or why there is none: derived
    /// from the class key, or (in a session scoped to an app) stored as is.
    func groupKey(_ pclass: ProtectionClass, _ group: String) throws -> SecureBytes {
        // Rows come in runs of one class and group: skip building and hashing the cache key.
        if let last = lastGroupKey, last.pclass == pclass, last.group == group { return last.key }
        let cacheKey = pclass.rawValue + "\u{0}" + group
        if let key = groupKeys[cacheKey] {
            lastGroupKey = (pclass, group, key)
            return key
        }
        let key: SecureBytes
        if let classKey = keys[pclass.rawValue] {
            key = Keychain.deriveGroupKey(classKey, keychainID: keybag.keychainID, pclass, group)
        } else if let scoped = keys[scopedKeyName(pclass, group)] {
            key = scoped
        } else {
            throw unavailable(pclass, group)
        }
        groupKeys[cacheKey] = key
        lastGroupKey = (pclass, group, key)
        return key
    }

    static func deriveGroupKey(_ classKey: SecureBytes, keychainID: [UInt8], _ pclass: ProtectionClass, _ group: String) -> SecureBytes {
        KeyDerivation.derive(classKey, KeyDerivation.Context("locket.group.v1").with(keychainID).with(pclass.rawValue).with(group))
    }

    /// Whether items of `pclass` in `group` can be opened now, and if not why:
    /// locked, outside a scoped session's groups, or bound to another device.
    func availability(of pclass: ProtectionClass, group: String, id: Int64? = nil) -> Item.Availability {
        if pclass.thisDeviceOnly, let id, id <= tdoBoundary { return .unavailableOnThisDevice }
        if keys[pclass.rawValue] != nil || keys[scopedKeyName(pclass, group)] != nil { return .available }
        guard unlockedTiers.contains(pclass.tier) else { return .locked }
        if let scope = sessionScope, scope.classes.contains(pclass.rawValue) { return .locked }
        return pclass.thisDeviceOnly ? .unavailableOnThisDevice : .locked
    }

    func unavailable(_ pclass: ProtectionClass, _ group: String, id: Int64? = nil) -> KeychainError {
        if availability(of: pclass, group: group, id: id) == .unavailableOnThisDevice {
            return KeychainError(.interactionNotAllowed, "the item is bound to another device (\(pclass.name))")
        }
        if let scope = sessionScope, unlockedTiers.contains(pclass.tier) {
            return KeychainError(.interactionNotAllowed,
                                 "the session was unlocked for the access groups \(scope.groups.map { Printable.clip($0) }.joined(with: ", ")) only",
                                 hint: "an owner 'locket unlock' (without entitlements) opens every group")
        }
        return KeychainError(.interactionNotAllowed, "the keychain is locked (\(pclass.name) items need 'locket unlock')",
                             hint: "run 'locket unlock'")
    }

    // MARK: - Lock and unlock

    /// The inactivity timeout `unlock` uses when none is given: the
    /// keychain's setting, else 300 s. 0 means no auto-lock.
    public var defaultTimeout: UInt32 {
        guard let stored = meta["timeout"], stored.count == 8 else { return 300 }
        return UInt32(clamping: BigEndian.int64(stored))
    }

    /// Unlocks with `password` until `lock`, a reboot, or `timeout` seconds
    /// without use (0: no auto-lock).
    public func unlock(password: SecureBytes, timeout: UInt32?) throws {
        guard keybag.hasPassword else { return }
        try checkKDFParameters()
        // Count the attempt before checking it, so killing the process during
        // the password hash does not dodge the count; a success resets it.
        try recordAttempt(failed: true)
        let kek = try keybag.kek(password: password)
        var unwrapped = try keybag.unwrapWithKEK(kek, device: device, sameDevice: isBoundDevice(device))
        try authenticateWithPassword(unwrapped)
        try recordAttempt(failed: false)
        if device == nil {
            // A lost device secret: make a new one. Device-bound items of the
            // old one stay unreadable, as after restoring a phone from backup.
            try DeviceKey.create(secretPath: environment.deviceSecretPath())
            device = try deviceKey()
        }
        if let device, !isBoundDevice(device) {
            try rebind(&unwrapped, kek: kek, device: device)
        }
        try rewrapForThisDevice(unwrapped, device: device)
        try saveSession(unwrapped, timeout: timeout ?? defaultTimeout)
        try reloadKeys()
    }

    /// Whether `device` is the device the keychain's device-bound keys belong to.
    func isBoundDevice(_ device: SecureBytes?) -> Bool {
        guard let device, let stored = meta["device_fp"] else { return false }
        return Keybag.deviceFingerprint(device, keychainID: keybag.keychainID) == stored
    }

    /// The first unlock on a new device (a copied keychain, a lost device
    /// secret): fresh device-bound class keys for this device, so that new
    /// ThisDeviceOnly items work here. Items bound to the old device keep their
    /// old keys, which never open here; `tdo_boundary` (ids never repeat)
    /// tells them apart, so they show as unavailable on this device, not damaged.
    private func rebind(_ unwrapped: inout SessionKeys, kek: SecureBytes, device: SecureBytes) throws {
        var fresh = SessionKeys()
        for name in keybag.deviceBoundNames { fresh.set(name, SecureBytes(copying: Sodium.random(32))) }
        var bag = keybag
        bag.wrap(fresh, kek: kek, device: device)
        let fingerprint = Keybag.deviceFingerprint(device, keychainID: keybag.keychainID)
        let boundary: Int64 = try write {
            let last = try database.prepare("SELECT ifnull(max(id), 0) FROM items")
            _ = try last.step()
            let boundary = max(last.int64(0), tdoBoundary)
            try Keychain.writeKeybag(database, bag)
            try Keychain.writeMeta(database, [("device_fp", fingerprint), ("tdo_boundary", BigEndian.bytes(boundary))])
            return boundary
        }
        keybag = bag
        meta["device_fp"] = fingerprint
        meta["tdo_boundary"] = BigEndian.bytes(boundary)
        for (name, key) in fresh.entries { unwrapped.set(name, key) }
    }

    /// Device-bound items with ids up to this one belong to an earlier device.
    var tdoBoundary: Int64 { meta["tdo_boundary"].map(BigEndian.int64) ?? 0 }

    /// Reloads this object's keys after the session changed under it.
    func reloadKeys() throws {
        keys = SessionKeys()
        unlockedTiers = [.always]
        groupKeys = [:]
        lastGroupKey = nil
        sessionScope = nil
        try loadKeys()
    }

    /// Re-wraps the always-available keys for this device's key when they came
    /// from elsewhere (a copied keychain, a lost device secret).
    private func rewrapForThisDevice(_ unwrapped: SessionKeys, device: SecureBytes?) throws {
        guard let device else { return }
        let current = keybag.unwrapWithDevice(device)
        var missing = SessionKeys()
        for name in [ProtectionClass.always.rawValue, Keybag.indexKeyName] where current[name] == nil {
            if let key = unwrapped[name] { missing.set(name, key) }
        }
        guard !missing.entries.isEmpty else { return }
        var bag = keybag
        bag.wrap(missing, kek: nil, device: device)
        try write { try Keychain.writeKeybag(database, bag) }
        keybag = bag
    }

    /// Saves the keys for later commands: both tiers, or only those in `tiers`.
    func saveSession(_ unwrapped: SessionKeys, timeout: UInt32,
                     tiers: Set<ProtectionClass.Tier> = [.afterFirstUnlock, .whenUnlocked]) throws {
        var firstUnlock = SessionKeys(), whenUnlocked = SessionKeys()
        if let groups = caller.accessGroups {
            // An app's unlock keeps only its (class, group) keys: a later command,
            // even one run without entitlements, can open nothing else.
            var classes: [ProtectionClass.Tier: Set<String>] = [:]
            for (name, classKey) in unwrapped.entries {
                guard let pclass = ProtectionClass(rawValue: name), pclass.tier != .always else {
                    if name == Keybag.indexKeyName { firstUnlock.set(name, classKey); whenUnlocked.set(name, classKey) }
                    continue
                }
                for group in groups {
                    let key = Keychain.deriveGroupKey(classKey, keychainID: keybag.keychainID, pclass, group)
                    if pclass.tier == .whenUnlocked { whenUnlocked.set(scopedKeyName(pclass, group), key) } else { firstUnlock.set(scopedKeyName(pclass, group), key) }
                }
                classes[pclass.tier, default: []].insert(name)
            }
            whenUnlocked.scope = SessionKeys.Scope(groups: groups, classes: classes[.whenUnlocked] ?? [])
            firstUnlock.scope = SessionKeys.Scope(groups: groups, classes: classes[.afterFirstUnlock] ?? [])
            if tiers.contains(.afterFirstUnlock) { try session.save(.afterFirstUnlock, keys: firstUnlock, timeout: 0) }
            if tiers.contains(.whenUnlocked) { try session.save(.whenUnlocked, keys: whenUnlocked, timeout: timeout) }
            return
        }
        for (name, key) in unwrapped.entries {
            switch ProtectionClass(rawValue: name)?.tier {
            case .whenUnlocked?: whenUnlocked.set(name, key)
            case .afterFirstUnlock?, .always?: firstUnlock.set(name, key)
            case nil: firstUnlock.set(name, key); whenUnlocked.set(name, key)
            }
        }
        if tiers.contains(.afterFirstUnlock) { try session.save(.afterFirstUnlock, keys: firstUnlock, timeout: 0) }
        if tiers.contains(.whenUnlocked) { try session.save(.whenUnlocked, keys: whenUnlocked, timeout: timeout) }
    }

    /// Forgets the when-unlocked keys; with `all`, every key (as a reboot would).
    public func lock(all: Bool) {
        session.remove(.whenUnlocked)
        if all { session.remove(.afterFirstUnlock) }
        try? reloadKeys()
    }

    /// Whether the when-unlocked keys are in the session now.
    public var isUnlocked: Bool { unlockedTiers.contains(.whenUnlocked) }
}
