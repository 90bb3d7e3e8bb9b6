import LocketCore
import Glibc
import LocketSupport

/// Named remote keychains (`keychain add-remote NAME URL`, SPEC §17): a file
/// `NAME.remote` beside the named keychain files in `$XDG_DATA_HOME/locket`,
/// so that `-k NAME` names a file keychain or a remote one alike. It holds
/// the URL (no password: a URL never carries one) and, optionally, the
/// service of the generic password that holds the database password.
///
/// Looked up only when no `NAME.keychain` exists: a file keychain's command
/// pays nothing for the feature.
public enum RemoteRegistry {
    /// One registered remote.
    public struct Entry: Sendable, Equatable {
        public let name: String
        public let url: String
        /// The service of the generic password (in the login keychain) holding the database password.
        public let passwordService: String?
    }

    static let suffix = ".remote"
    /// The largest registration read.
    static let limit = 8192

    /// Registers `name` for `url`; errSecDuplicateKeychain when a keychain or remote of that name exists.
    /// `replacing`: re-points the remote registered as `name` to `url`
    /// (another server, or a list of them after a failover), keeping its
    /// password service unless `passwordService` names one; the keychain is
    /// the same, so this device's trust, device key and generation record
    /// (kept by the keychain's identity) go on as they were. Nothing to
    /// replace is errSecNoSuchKeychain. Returns the registration it replaced.
    @discardableResult
    public static func add(name: String, url: String, passwordService: String?, replacing: Bool = false,
                           environment: Environment) throws -> Entry? {
        try checkName(name)
        _ = try RemoteLocation(url: url)
        if let passwordService, passwordService.isEmpty || passwordService.contains("\n") {
            throw KeychainError(.param, "the password service must be one non-empty line")
        }
        let directory = try environment.dataDirectory()
        let file = directory + "/" + name + suffix
        if FileIO.exists(directory + "/" + name + ".keychain") {
            throw KeychainError(.duplicateKeychain, "a keychain named '\(name)' already exists (a file)")
        }
        var replaced: Entry?
        if replacing {
            guard let old = try lookup(name, environment: environment) else {
                throw KeychainError(.noSuchKeychain, "no remote keychain is registered as '\(name)'")
            }
            replaced = old
        } else if FileIO.exists(file) {
            throw KeychainError(.duplicateKeychain, "a keychain named '\(name)' already exists")
        }
        try FileIO.makeDirectories(directory)
        try FileIO.checkPrivateFile(file, what: "remote keychain's registration")
        var text = "url \(url)\n"
        if let service = passwordService ?? replaced?.passwordService { text += "password-service \(service)\n" }
        if replaced != nil {
            // Replaced whole (written beside it, renamed over it): a reader sees the old one or the new.
            try Array(text.utf8).withUnsafeBytes { try FileIO.writeAtomically(file, $0) }
        } else {
            try Array(text.utf8).withUnsafeBytes { try FileIO.writeNew(file, $0) }
        }
        return replaced
    }

    /// The remote registered as `name`, nil when there is none.
    public static func lookup(_ name: String, environment: Environment) throws -> Entry? {
        guard !name.contains("/"), !name.isEmpty else { return nil }
        let file = try environment.dataDirectory() + "/" + name + suffix
        guard FileIO.exists(file) else { return nil }
        try FileIO.checkPrivateFile(file, what: "remote keychain's registration")
        guard let bytes = try FileIO.readSmall(file, limit: limit), let text = String(validating: bytes, as: UTF8.self) else {
            throw KeychainError(.decode, "\(file) is not a remote keychain's registration")
        }
        var url: String?
        var service: String?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("url ") { url = String(line.dropFirst(4)) }
            if line.hasPrefix("password-service ") { service = String(line.dropFirst(17)) }
        }
        guard let url, RemoteLocation.isURL(url) else { throw KeychainError(.decode, "\(file) names no postgres:// URL") }
        return Entry(name: name, url: url, passwordService: service)
    }

    /// Every registered remote, by name.
    public static func all(environment: Environment) throws -> [Entry] {
        let directory = try environment.dataDirectory()
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name.hasSuffix(suffix), name.count > suffix.count { names.append(String(name.dropLast(suffix.count))) }
        }
        return try names.sorted().compactMap { try lookup($0, environment: environment) }
    }

    private static func checkName(_ name: String) throws {
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.hasPrefix("-"),
              name.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7f }) else {
            throw KeychainError(.param, "'\(Printable.clip(name))' is not a keychain name")
        }
    }
}
