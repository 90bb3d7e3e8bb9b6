import Glibc

/// Where locket's files are, resolved from environment variables (SPEC §2).
/// The engine reads only the Environment the CLI hands it (`.process`, or a
/// fixed set in tests).
public struct Environment: Sendable {
    private enum Source: Sendable {
        case process
        case given([String: String])
    }

    private let source: Source

    /// A fixed set of variables (tests, fuzzing).
    public init(_ variables: [String: String]) { source = .given(variables) }

    private init(source: Source) { self.source = source }

    /// The process's own environment, read with getenv(3) on demand: a command
    /// looks at a handful of variables, and copying all of them into a
    /// dictionary first cost more than the rest of its start-up (issue 7).
    public static let process = Environment(source: .process)

    public subscript(name: String) -> String? {
        switch source {
        case .process: getenv(name).map { String(cString: $0) }
        case .given(let variables): variables[name]
        }
    }

    /// Every variable, sorted by name (what `exec` hands on).
    public var all: [(name: String, value: String)] {
        var out: [(name: String, value: String)] = []
        switch source {
        case .given(let variables):
            out = variables.map { ($0.key, $0.value) }
        case .process:
            // The first of two same-named entries wins, as with getenv(3).
            var seen = Set<String>()
            var p = environ
            while let entry = p.pointee {
                let s = String(cString: entry)
                if let eq = s.firstIndex(of: "="), seen.insert(String(s[..<eq])).inserted {
                    out.append((String(s[..<eq]), String(s[s.index(after: eq)...])))
                }
                p += 1
            }
        }
        return out.sorted { $0.name < $1.name }
    }

    /// An XDG variable's value when it is an absolute path; relative ones are ignored, as the XDG spec says.
    private func xdg(_ name: String, default suffix: String) throws -> String {
        if let value = self[name], value.hasPrefix("/") { return value }
        guard let home = self["HOME"], home.hasPrefix("/") else {
            throw KeychainError(.param, "HOME is not set to an absolute path, and neither is \(name)")
        }
        return home + suffix
    }

    /// `$XDG_DATA_HOME/locket`.
    public func dataDirectory() throws -> String { try xdg("XDG_DATA_HOME", default: "/.local/share") + "/locket" }

    /// The keychain file for `-k PATH|NAME`, `LOCKET_KEYCHAIN`, or `login`.
    public func keychainPath(_ argument: String?) throws -> String {
        let spec = argument ?? self["LOCKET_KEYCHAIN"].flatMap { $0.isEmpty ? nil : $0 } ?? "login"
        if spec.contains("/") { return spec }
        guard !spec.isEmpty, spec != ".", spec != ".." else { throw KeychainError(.param, "'\(spec)' is not a keychain name") }
        return try dataDirectory() + "/" + spec + ".keychain"
    }

    /// The device secret file.
    public func deviceSecretPath() throws -> String {
        if let path = self["LOCKET_DEVICE_KEY"], !path.isEmpty { return path }
        return try xdg("XDG_STATE_HOME", default: "/.local/state") + "/locket/device.key"
    }

    /// `LOCKET_SESSION`: nil lets locket choose (keyring, then directory).
    public func sessionBackend() throws -> SessionStore.Backend? {
        switch self["LOCKET_SESSION"] {
        case nil, "": return nil
        case "keyring": return .keyring
        case "dir": return .directory
        case let other?: throw KeychainError(.param, "LOCKET_SESSION must be keyring or dir, not '\(Printable.clip(other))'")
        }
    }

    /// The tmpfs directory for sessions when the kernel keyring is not used.
    public func sessionDirectory(uid: UInt32) -> String {
        if let runtime = self["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { return runtime + "/locket" }
        return "/dev/shm/locket-\(uid)"
    }

    /// Test suites only: `LOCKET_TEST_WEAK_KDF=1` makes `init` use libsodium's
    /// minimum Argon2id cost so that hundreds of keychains can be made quickly.
    public var testWeakKDF: Bool { self["LOCKET_TEST_WEAK_KDF"] == "1" }
}
