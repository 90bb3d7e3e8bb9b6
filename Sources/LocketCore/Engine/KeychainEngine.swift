import Glibc
import LocketSupport

/// An open keychain's shared state and the machinery every role of it runs
/// on: the items (`Keychain`), the session (`KeychainSession`), keys
/// (`KeychainKeys`), and a storage's own administration (`KeychainGrant`).
/// Internal: callers reach it only through those roles.
///
/// Where the machinery lives: opening and creating (KeychainEngine+Open,
/// +Create), transactions, writes, the header's authentication and rollback
/// detection (+Header), the keys loaded from the session and bound to this
/// device (+SessionKeys), the one row scan (RowScan), what a query selects
/// (+Rows), sealing an item (+Sealing) and re-sealing matches (+Modify),
/// access control's proofs (AccessControl/KeychainEngine+Access), who may
/// touch which group (Access/AccessPolicy).
package final class KeychainEngine {
    /// Where the keychain is: its file's path, or its URL.
    let path: String
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
    var isRolledBack = false
    /// Who is calling (the owner, or an app with its entitlements), given to `open`.
    let caller: Caller
    /// Proofs given for items with access control (SPEC §14), this process only.
    var proof = ProofState()
    /// The TPM's helper, started by the first Secure Enclave key this
    /// keychain makes or uses (SPEC §21) and ended with it: one helper a
    /// command, never one for a command that touches no TPM key.
    var tpmClient: TPMClient?
    /// A TPM-bound keychain's binding secret, once the TPM unsealed it for this process.
    var tpmSecret: SecureBytes?
    /// Whether loading keys may unseal a bound keychain's device keys (not while locking).
    var unsealsForDeviceKeys = true
    /// Hears what a password check is about to wait for (`KeychainSession.passwordWaitObserver`).
    var passwordWaitObserver: ((KeychainSession.PasswordWait) -> Void)?
    /// The generation mirror last made, and the keys it was made for
    /// (`generationMirror(indexKey:)`).
    var madeMirror: MadeMirror?

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
    var hasPassword: Bool { keybag.hasPassword }

    /// The device key, or nil when the device secret file is missing.
    func deviceKey() throws -> SecureBytes? {
        try DeviceKey.load(secretPath: environment.deviceSecretPath())
    }

    /// The inactivity timeout `unlock` uses when none is given: the
    /// keychain's setting, else 300 s. 0 means no auto-lock.
    var defaultTimeout: UInt32 {
        guard let stored = meta[.timeout], stored.count == 8 else { return 300 }
        return UInt32(clamping: BigEndian.int64(stored))
    }

    /// Operations the keychain allows, as its storage decides.
    var capabilities: KeychainCapabilities { storage.policy.capabilities }

    /// Refuses `capability` when the keychain lacks it (errSecNotAvailable).
    func require(_ capability: KeychainCapabilities) throws {
        guard capabilities.contains(capability) else { throw storage.unavailable(capability.activity) }
    }
}
