import Glibc
import LocketSupport

/// A keychain file: opening one, and `init` (FileStorage+Open, +Create).
extension Keychain {
    /// Opens the keychain file at `path` for `caller` and loads whatever keys
    /// the session holds. A keychain older than this device has seen (put
    /// back from a copy) fails with errSecDecode (reason `.rolledBack`),
    /// unless `acceptRollback`: then it opens with `isRolledBack` set, for
    /// `session.acceptRollback(password:)`.
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
        let (storage, stored) = try FileStorage.open(path, keepOpen: keepsFileOpen)
        return try Keychain(opening: storage, stored, caller: caller, environment: environment, extendSession: extendSession,
                            acceptRollback: acceptRollback)
    }

    /// Creates a keychain at `path` with `password` (nil: no password),
    /// hashed with Argon2id at `kdf`. The caller chooses the cost: the command
    /// line never passes less than `.interactive`.
    /// With `tpm`, bound to this machine's TPM (SPEC §21, `init --tpm`).
    public static func create(at path: String, password: SecureBytes?, kdf cost: KDFCost = .moderate,
                              environment: Environment, sessionTimeout: UInt32? = nil, tpm: Bool = false) throws {
        try create(in: FileStorage.New(path: path, format: Schema.format), password: password, kdf: cost, environment: environment,
                   sessionTimeout: sessionTimeout, tpm: tpm)
    }

    /// `create` in a given format: format 1 only for tests of the migration.
    static func create(at path: String, password: SecureBytes?, kdf cost: KDFCost, environment: Environment,
                       format: Int64) throws {
        try create(in: FileStorage.New(path: path, format: format), password: password, kdf: cost, environment: environment)
    }
}
