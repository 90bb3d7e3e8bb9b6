import Glibc
import LocketSupport

/// A keychain file: the SecItem-like facade over the item store, the keybag
/// and the session. Never prints, never exits; every failure is a KeychainError.
///
/// Where the rest lives: creating (Keychain+Create), adding, searching,
/// updating and deleting items (Keychain+Add/Search/Update), the session
/// (Keychain+Session), passwords (Keychain+Password), status and settings
/// (Keychain+Status), writes and rollback detection (Keychain+Generation).
public final class Keychain {
    /// The keychain file.
    public let path: String
    /// Where the items live: a file, or a PostgreSQL database (SPEC §17).
    enum Backend {
        case file(Database)
        case remote(RemoteStore)
    }
    let backend: Backend
    /// The file's database. Only what a file keychain alone does reaches it:
    /// every public entry of those refuses a remote keychain first (`requireFile`).
    var database: Database {
        guard case .file(let database) = backend else { preconditionFailure("a file keychain's statement on a remote keychain") }
        return database
    }
    /// Every statement on the items table of the file.
    var store: ItemStore { ItemStore(database: database, format: format) }
    /// The item statements of the SecItem operations, whichever the backend.
    var itemStore: any ItemStoring {
        switch backend {
        case .file(let database): ItemStore(database: database, format: format)
        case .remote(let remote): remote.items
        }
    }
    /// The file's format (SPEC §7): 1 until the first write migrates it.
    var format: Int64
    /// Tests that fill a format-1 file to migrate turn the migration off.
    var migratesOnWrite = true
    let environment: Environment
    var keybag: Keybag
    let session: SessionStore
    /// The keys available to this process and what they open.
    var cache: KeyCache
    /// Whether loading the session counts as a use (status only looks).
    var extendsSession = true
    /// The meta table as read at open (and as this process last wrote it).
    var meta: [String: [UInt8]] {
        didSet { cache.thisDeviceOnlyBoundary = meta.integer(.thisDeviceOnlyBoundary) ?? 0 }
    }
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
    /// Who is calling (the owner, or an app with its entitlements), given to `open`.
    public let caller: Caller
    /// Proofs given for items with access control (SPEC §14), this process only.
    var proof = ProofState()

    /// The access group `add` uses when none is given, for the owner.
    public static let defaultAccessGroup = "default"
    /// The largest secret accepted, in bytes (errSecDataTooLarge above it).
    public static let maximumDataLength = 16 * 1024 * 1024

    init(path: String, caller: Caller, backend: Backend, environment: Environment, keybag: Keybag,
         meta: [String: [UInt8]]) throws {
        self.path = path
        self.caller = caller
        self.meta = meta
        self.format = meta.integer(.format) ?? Schema.format
        self.backend = backend
        self.environment = environment
        self.keybag = keybag
        self.cache = KeyCache(keychainID: keybag.keychainID)
        cache.thisDeviceOnlyBoundary = meta.integer(.thisDeviceOnlyBoundary) ?? 0
        self.session = try SessionStore(environment: environment, keychainID: keybag.keychainID)
    }

    /// Whether the keychain has a password (a keychain without one is always unlocked).
    public var hasPassword: Bool { keybag.hasPassword }

    /// The keychain's random identity, which keys its session.
    public var identity: String { Hex.encode(keybag.keychainID) }

    // MARK: - Opening

    /// Opens an existing keychain for `caller` and loads whatever keys the
    /// session holds. A keychain older than this device has seen (put back from a copy) fails
    /// with errSecDecode (reason `.rolledBack`), unless `acceptRollback`: then
    /// it opens with `isRolledBack` set, for `acceptRollback(password:)`.
    ///
    /// The file is held (an exclusive lock: other processes wait) only while
    /// a call reads or writes it. With `keepsFileOpen`, the connection that
    /// read the header stays open for the first such call, which saves that
    /// call opening the file and parsing its schema again (about a third of
    /// a `find`); the caller must then make that call at once, or call
    /// `releaseFile()` before anything that waits (a prompt, a child, a server).
    public static func open(at path: String, caller: Caller = .owner, environment: Environment, extendSession: Bool = true,
                            acceptRollback: Bool = false, keepsFileOpen: Bool = false) throws -> Keychain {
        try Sodium.ready()
        umask(0o077)
        guard FileIO.exists(path) else {
            throw KeychainError(.noSuchKeychain, "no keychain at \(path)", reason: .noKeychain(path: path))
        }
        if try FileIO.checkPrivateFile(path, what: "keychain") {
            try Database.claimCompanions(of: path)
        }
        let db = try Database(path: path, create: false)
        let (bag, meta) = try readHeader(db, path: path, keepOpen: keepsFileOpen)
        let keychain = try Keychain(path: path, caller: caller, backend: .file(db), environment: environment, keybag: bag, meta: meta)
        keychain.extendsSession = extendSession
        keychain.acceptsRollback = acceptRollback
        do {
            try keychain.loadKeys()
            if let indexKey = keychain.keys[Keybag.indexKeyName], !keychain.headerChecked {
                try keychain.authenticate(Header(meta: keychain.meta, keybag: keychain.keybag.rows), indexKey: indexKey)
            }
        } catch {
            db.close()
            throw error
        }
        return keychain
    }

    /// Closes the keychain's file, releasing it to other processes, until
    /// the next call that reads or writes it opens it again. Every call
    /// closes it when it is done; this is for a `keepsFileOpen` opening
    /// that is not followed by a call at once.
    public func releaseFile() { if case .file(let database) = backend { database.close() } }

    /// The keybag and meta rows, checked for the format and a sane identity.
    private static func readHeader(_ db: Database, path: String, keepOpen: Bool) throws -> (Keybag, [String: [UInt8]]) {
        let header: Header
        do {
            header = try db.transaction(write: false, keepOpen: keepOpen) { try MetaStore.read(db) }
        } catch let error as KeychainError where error.code == .io {
            // "no such table" and friends: a SQLite file, but not a keychain.
            throw KeychainError(.invalidKeychain, "\(path) is not a locket keychain")
        }
        let meta = header.meta
        guard let encoded = meta[.format], encoded.count == 8, case let format = BigEndian.int64(encoded), format >= 1 else {
            throw KeychainError(.invalidKeychain, "\(path) is not a locket keychain")
        }
        // Refused before anything is written: a newer release's file is never touched.
        guard format <= Schema.format else {
            throw KeychainError(.invalidKeychain, "\(path) is a keychain of format \(format), newer than this locket knows (\(Schema.format))",
                                reason: .newerFormat(format))
        }
        guard let id = meta[.id], id.count == 16 else { throw KeychainError(.decode, "\(path) has a damaged header") }
        var kdf: KDFParameters?
        if let encoded = meta[.kdf] {
            guard let parameters = KDFParameters(encoded: encoded) else {
                throw KeychainError(.decode, "\(path) has damaged password-hash parameters")
            }
            kdf = parameters
        }
        return (Keybag(keychainID: id, kdf: kdf, rows: header.keybag), meta)
    }

    /// The device key, or nil when the device secret file is missing.
    func deviceKey() throws -> SecureBytes? {
        try DeviceKey.load(secretPath: environment.deviceSecretPath())
    }
}
