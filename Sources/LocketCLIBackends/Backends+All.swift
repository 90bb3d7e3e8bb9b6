import LocketCLI
import LocketCore
import LocketLocator
import LocketRemote

extension Backends {
    /// Every storage this build has, as LocketLocator knows them, and the
    /// remote administration: what `locket` and the tests run the command line with.
    public static let all = Backends(resolve: { spec, environment in LocatedKeychain(try KeychainLocator.resolve(spec, environment: environment)) },
                                     isRemote: { $0.remote != nil }, offlineSince: { $0.remote?.offlineSince },
                                     keychainCommand: KeychainCommand.run)
}

/// A `KeychainLocation` as the command line holds it.
struct LocatedKeychain: KeychainAddress {
    let location: KeychainLocation

    init(_ location: KeychainLocation) { self.location = location }

    var description: String { location.description }
    var filePath: String? { location.filePath }
    var requiresPassword: Bool { location.requiresPassword }

    func open(caller: Caller, environment: Environment, extendSession: Bool, acceptRollback: Bool, keepsFileOpen: Bool,
              maxStale: Int64?) throws -> Keychain {
        try Keychain.open(location, caller: caller, environment: environment, extendSession: extendSession,
                          acceptRollback: acceptRollback, keepsFileOpen: keepsFileOpen, maxStale: maxStale)
    }

    func create(password: SecureBytes?, kdf: KDFCost, tpm: Bool, environment: Environment) throws {
        try Keychain.create(location, password: password, kdf: kdf, tpm: tpm, environment: environment)
    }

    func keySource(caller: Caller, environment: Environment, maxStale: Int64?) -> KeychainKeySource {
        KeychainKeySource(location: location, caller: caller, environment: environment, maxStale: maxStale)
    }
}

extension Keychain {
    /// This keychain's remote administration, or the refusal a keychain
    /// elsewhere gets for `operation` (errSecNotAvailable, worded by LocketRemote).
    func remote(for operation: RemoteAdmin.Operation) throws -> RemoteAdmin {
        guard let remote else { throw RemoteAdmin.refusal(operation) }
        return remote
    }
}
