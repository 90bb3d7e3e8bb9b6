import Glibc
import LocketSupport

/// A keychain: the SecItem-like facade over the item rows, the keybag and
/// the session, wherever the keychain lives (`KeychainStorage`; each kind
/// of place is a folder under Backends/). Never prints, never exits; every
/// failure is a KeychainError.
///
/// Where the rest lives: opening and creating (Keychain+Open, +Create),
/// adding, searching, updating and deleting items (Keychain+Add, +Search,
/// +Update, over one row scan, RowScan), the session (Keychain+Session),
/// passwords (Keychain+Password), status and settings (Keychain+Status),
/// writes, the header's authentication and rollback detection (Keychain+Header).
public final class Keychain {
    /// Where the keychain is: its file's path, or its URL.
    public let path: String
    /// Where its header and items live, and what that place decides.
    let storage: any KeychainStorage
    let environment: Environment
    var keybag: Keybag
    let session: SessionStore
    /// The keys available to this process and what they open.
    var cache: KeyCache
    /// Whether loading the session counts as a use (status only looks).
    var extendsSession = true
    /// The meta rows as read at open (and as this process last wrote or read them in a write).
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
    /// Hears what a password check is about to wait for (another attempt's
    /// turn, the delay after wrong passwords), before it waits: the command
    /// line says so on stderr, the Security module at the terminal.
    public var passwordWaitObserver: ((PasswordWait) -> Void)?

    /// The access group `add` uses when none is given, for the owner.
    public static let defaultAccessGroup = "default"
    /// The largest secret accepted, in bytes (errSecDataTooLarge above it).
    public static let maximumDataLength = 16 * 1024 * 1024

    init(storage: any KeychainStorage, caller: Caller, environment: Environment, keybag: Keybag, meta: [String: [UInt8]]) throws {
        self.path = storage.address
        self.caller = caller
        self.meta = meta
        self.storage = storage
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

    /// Lets go of what the keychain holds between calls (a file's lock),
    /// until the next call that reads or writes it. Every call lets go when
    /// it is done; this is for a `keepsFileOpen` opening that is not
    /// followed by a call at once.
    public func releaseFile() { storage.hold?.release() }

    /// The device key, or nil when the device secret file is missing.
    func deviceKey() throws -> SecureBytes? {
        try DeviceKey.load(secretPath: environment.deviceSecretPath())
    }
}
