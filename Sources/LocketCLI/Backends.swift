import LocketCore

/// What the command line reaches beyond the engine: which keychain `-k`
/// names and how one opens there (LocketLocator: a file, a NAME, a URL or a
/// registered remote), and what only a remote keychain has (LocketRemote:
/// its offline cache, `locket keychain`'s operations). LocketCLI names
/// neither module, so it compiles as soon as the engine is built, beside
/// them (make test's debug build, issue 38); LocketCLIBackends makes the one
/// value (`Backends.all`) that `locket`'s main and the tests run the command line with.
public struct Backends: Sendable {
    /// The keychain `spec` names (`-k`; nil: LOCKET_KEYCHAIN, else the login keychain).
    let resolve: @Sendable (_ spec: String?, _ environment: Environment) throws -> any KeychainAddress
    /// Whether an opened keychain is a remote one.
    let isRemote: @Sendable (Keychain) -> Bool
    /// Since when (µs since 1970) an opened remote keychain has been read
    /// from its offline cache (`--max-stale`); nil when it reads its server, or is a file.
    let offlineSince: @Sendable (Keychain) -> Int64?
    /// What `locket keychain` runs (its row, options and help are the table's).
    let keychainCommand: @Sendable (Invocation, Context) throws -> Int32

    package init(resolve: @escaping @Sendable (_ spec: String?, _ environment: Environment) throws -> any KeychainAddress,
                 isRemote: @escaping @Sendable (Keychain) -> Bool, offlineSince: @escaping @Sendable (Keychain) -> Int64?,
                 keychainCommand: @escaping @Sendable (Invocation, Context) throws -> Int32) {
        self.resolve = resolve
        self.isRemote = isRemote
        self.offlineSince = offlineSince
        self.keychainCommand = keychainCommand
    }
}

/// A keychain's address as the command line uses it (LocketLocator's
/// `KeychainLocation`): its path or URL for messages, and opening it.
/// Not a CustomStringConvertible (interpolate `description`): a conformance
/// to a protocol that refines one of the standard library's has its witness
/// table made at run time, in every lookup (~1,250 instructions of `find -w`).
package protocol KeychainAddress {
    /// The path or the URL, for messages and prompts (a URL never holds a password).
    var description: String { get }
    /// The keychain file's path; nil for a keychain in a database.
    var filePath: String? { get }
    /// Whether a keychain here must have a password.
    var requiresPassword: Bool { get }
    /// `Keychain.open(_:...)` of the location.
    func open(caller: Caller, environment: Environment, extendSession: Bool, acceptRollback: Bool, keepsFileOpen: Bool,
              maxStale: Int64?) throws -> Keychain
    /// `Keychain.create(_:...)` of the location.
    func create(password: SecureBytes?, kdf: KDFCost, tpm: Bool, environment: Environment) throws
    /// The ssh-agent's keys from the keychain here, opened afresh for every request.
    func keySource(caller: Caller, environment: Environment, maxStale: Int64?) -> KeychainKeySource
}
