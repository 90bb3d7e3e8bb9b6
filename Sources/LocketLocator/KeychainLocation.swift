import LocketCore
import LocketRemote
import LocketSupport

/// Which keychain: a file, or a keychain in PostgreSQL (SPEC §17) with
/// where its database password comes from. `KeychainLocator.resolve` makes
/// one from what a user names (`-k`, LOCKET_KEYCHAIN); an in-process caller
/// may also make one directly. `Keychain.open(_:)` and `Keychain.create(_:)` take it.
public struct KeychainLocation: Sendable, Hashable, CustomStringConvertible {
    enum Place: Sendable {
        case file(path: String)
        /// A registered name's password service: the generic password in the
        /// login keychain that holds the database password.
        case remote(RemoteLocation, passwordService: String?)
    }

    let place: Place

    /// The keychain file at `path`.
    public static func file(_ path: String) -> KeychainLocation { KeychainLocation(place: .file(path: path)) }

    /// The keychain in the database at `location`. The database password
    /// comes from libpq's own sources (PGPASSFILE, ~/.pgpass, a service
    /// file, PGPASSWORD), or, with `passwordService`, from the login
    /// keychain's generic password of that service (and of the URL's user
    /// as account when it names one), read at every opening.
    public static func remote(_ location: RemoteLocation, passwordService: String? = nil) -> KeychainLocation {
        KeychainLocation(place: .remote(location, passwordService: passwordService))
    }

    /// The path or the URL, for messages and prompts (a URL never holds a password).
    public var description: String {
        switch place {
        case .file(let path): path
        case .remote(let location, _): location.url
        }
    }

    /// The keychain file's path; nil for a keychain in a database.
    public var filePath: String? {
        if case .file(let path) = place { return path }
        return nil
    }

    /// The same keychain, named the same way: the same path, or the same
    /// URL, parameters, helper and password service.
    public static func == (a: KeychainLocation, b: KeychainLocation) -> Bool { a.identity == b.identity }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) { hasher.combine(identity) }

    /// Everything that tells two locations apart, as text (an optional
    /// marked present or absent, so that none equals an empty one).
    private var identity: [String] {
        switch place {
        case .file(let path): ["file", path]
        case .remote(let location, let service):
            ["remote", location.url, location.helper.map { "+" + $0 } ?? "-", service.map { "+" + $0 } ?? "-"]
                + location.parameters.flatMap { [$0.0, $0.1] }
        }
    }

    /// Whether a keychain here must have a password: in a database its keys
    /// would otherwise open for whoever reads the database.
    public var requiresPassword: Bool {
        switch place {
        case .file: StoragePolicy.file.requiresPassword
        case .remote: StoragePolicy.remote.requiresPassword
        }
    }

    /// Whether the keychain is in a database (what only a remote keychain
    /// does is `Keychain.remote`'s).
    public var isRemote: Bool {
        if case .remote = place { return true }
        return false
    }
}

/// The one answer to "which keychain" for every command, the ssh-agent and
/// in-process callers (the Secret Service provider, the Security module).
public enum KeychainLocator {
    /// The keychain `spec` names (`-k`; nil: LOCKET_KEYCHAIN, else the
    /// login keychain): a `postgres://` URL; a path (anything with a slash);
    /// a NAME, the file `NAME.keychain` in `$XDG_DATA_HOME/locket`, or where
    /// no such file exists, a remote registered as NAME (`keychain
    /// add-remote`). A malformed URL, a bad name or an unreadable
    /// registration is refused here, before anything is opened. A file
    /// keychain's command pays one existence check for a NAME, nothing more.
    public static func resolve(_ spec: String?, environment: Environment) throws -> KeychainLocation {
        let spec = try spec ?? environment["LOCKET_KEYCHAIN"].flatMap { $0.isEmpty ? nil : $0 }
        // The first byte first: every file keychain's command asks.
        if let spec, RemoteLocation.isURL(spec) { return .remote(try RemoteLocation(url: spec)) }
        let path = try environment.keychainPath(spec)
        // A registered name counts only where no keychain file has it: a file of that name wins.
        if let spec, !FileIO.exists(path), let entry = try RemoteRegistry.lookup(spec, environment: environment) {
            return .remote(try RemoteLocation(url: entry.url), passwordService: entry.passwordService)
        }
        return .file(path)
    }

    /// `keychain add-remote`: `name` names the keychain at `url` from now
    /// on, where no keychain file has that name (`RemoteRegistry.add`);
    /// returns the URL it named before, when `replacing` let it be replaced.
    public static func register(name: String, url: String, passwordService: String?, replacing: Bool,
                                environment: Environment) throws -> String? {
        try RemoteRegistry.add(name: name, url: url, passwordService: passwordService, replacing: replacing, environment: environment)?.url
    }

    /// Whether `spec` is a database URL (`postgres://`, `postgresql://`):
    /// the same keychain whenever it is resolved, as a path is; a NAME may
    /// name a file or a registered remote from one call to the next.
    public static func isURL(_ spec: String) -> Bool { RemoteLocation.isURL(spec) }
}

extension Keychain {
    /// Opens the keychain at `location` for `caller`, as `open(at:)` opens a
    /// file and `open(remote:)` a remote keychain. `databasePassword` is the
    /// server login's, when neither libpq's sources nor the location's
    /// password service give it. `keepsFileOpen` matters to a file only,
    /// `maxStale` to a remote keychain only (its offline cache).
    public static func open(_ location: KeychainLocation, caller: Caller = .owner, environment: Environment,
                            databasePassword: SecureBytes? = nil, extendSession: Bool = true, acceptRollback: Bool = false,
                            keepsFileOpen: Bool = false, maxStale: Int64? = nil) throws -> Keychain {
        switch location.place {
        case .file(let path):
            return try open(at: path, caller: caller, environment: environment, extendSession: extendSession,
                            acceptRollback: acceptRollback, keepsFileOpen: keepsFileOpen)
        case .remote(let remote, let service):
            let password = try databasePassword ?? service.map {
                try Keychain.databasePassword(service: $0, user: remote.value("user"), environment: environment)
            }
            return try open(remote: remote, caller: caller, databasePassword: password, environment: environment,
                            extendSession: extendSession, acceptRollback: acceptRollback, maxStale: maxStale)
        }
    }

    /// Creates a keychain at `location` (see `create(at:)` and `createRemote`):
    /// errSecParam without a password where the location requires one. With
    /// `tpm`, a file bound to this machine's TPM; a remote keychain can't be
    /// (errSecParam: its devices have keys of their own, SPEC §17).
    public static func create(_ location: KeychainLocation, password: SecureBytes?, kdf cost: KDFCost = .moderate,
                              databasePassword: SecureBytes? = nil, tpm: Bool = false, environment: Environment) throws {
        switch location.place {
        case .file(let path):
            try create(at: path, password: password, kdf: cost, environment: environment, tpm: tpm)
        case .remote(let remote, let service):
            if tpm {
                throw KeychainError(.param, "\(location) can't be bound to this machine's TPM: a remote keychain's devices have keys of their own")
            }
            let databasePassword = try databasePassword ?? service.map {
                try Keychain.databasePassword(service: $0, user: remote.value("user"), environment: environment)
            }
            try createRemote(remote, password: password, kdf: cost, databasePassword: databasePassword, environment: environment)
        }
    }

    /// Opens the keychain at `location` for `keychain recover` (see
    /// `openForRecovery(remote:)`); nil for a keychain file, which has no
    /// history to recover (`RemoteAdmin.refusal(.recover)` says so).
    public static func openForRecovery(_ location: KeychainLocation, caller: Caller = .owner, environment: Environment) throws -> Keychain? {
        guard case .remote(let remote, let service) = location.place else { return nil }
        let password = try service.map { try Keychain.databasePassword(service: $0, user: remote.value("user"), environment: environment) }
        return try openForRecovery(remote: remote, caller: caller, databasePassword: password, environment: environment)
    }

    /// The database password kept as a generic password (service, and the
    /// URL's user as account when it names one) in the login keychain.
    static func databasePassword(service: String, user: String?, environment: Environment) throws -> SecureBytes {
        let login = try Keychain.open(at: environment.dataDirectory() + "/login.keychain", environment: environment)
        var query = Query(itemClass: .genericPassword)
        try query.match(.service, Array(service.utf8))
        if let user { try query.match(.account, Array(user.utf8)) }
        do {
            guard let password = try login.search(query, returnData: true).first?.data else { throw KeychainError(.itemNotFound) }
            return password
        } catch let error as KeychainError where error.code == .itemNotFound {
            throw KeychainError(.itemNotFound, "the database password (service '\(Printable.clip(service))') is not in the login keychain")
        }
    }
}
