/// Where locket's files are, resolved from environment variables (SPEC §2).
/// The engine never reads the process environment itself; the CLI passes it in.
public struct Environment: Sendable {
    public var variables: [String: String]

    public init(_ variables: [String: String]) { self.variables = variables }

    /// An XDG variable's value when it is an absolute path; relative ones are ignored, as the XDG spec says.
    private func xdg(_ name: String, default suffix: String) throws -> String {
        if let value = variables[name], value.hasPrefix("/") { return value }
        guard let home = variables["HOME"], home.hasPrefix("/") else {
            throw KeychainError(.param, "HOME is not set to an absolute path, and neither is \(name)")
        }
        return home + suffix
    }

    /// `$XDG_DATA_HOME/locket`.
    public func dataDirectory() throws -> String { try xdg("XDG_DATA_HOME", default: "/.local/share") + "/locket" }

    /// The keychain file for `-k PATH|NAME`, `LOCKET_KEYCHAIN`, or `login`.
    public func keychainPath(_ argument: String?) throws -> String {
        let spec = argument ?? variables["LOCKET_KEYCHAIN"].flatMap { $0.isEmpty ? nil : $0 } ?? "login"
        if spec.contains("/") { return spec }
        guard !spec.isEmpty, spec != ".", spec != ".." else { throw KeychainError(.param, "'\(spec)' is not a keychain name") }
        return try dataDirectory() + "/" + spec + ".keychain"
    }

    /// The device secret file.
    public func deviceSecretPath() throws -> String {
        if let path = variables["LOCKET_DEVICE_KEY"], !path.isEmpty { return path }
        return try xdg("XDG_STATE_HOME", default: "/.local/state") + "/locket/device.key"
    }

    /// `LOCKET_SESSION`: nil lets locket choose (keyring, then directory).
    public func sessionBackend() throws -> SessionStore.Backend? {
        switch variables["LOCKET_SESSION"] {
        case nil, "": return nil
        case "keyring": return .keyring
        case "dir": return .directory
        case let other?: throw KeychainError(.param, "LOCKET_SESSION must be keyring or dir, not '\(Printable.clip(other))'")
        }
    }

    /// The tmpfs directory for sessions when the kernel keyring is not used.
    public func sessionDirectory(uid: UInt32) -> String {
        if let runtime = variables["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { return runtime + "/locket" }
        return "/dev/shm/locket-\(uid)"
    }

    /// Test suites only: `LOCKET_TEST_WEAK_KDF=1` makes `init` use libsodium's
    /// minimum Argon2id cost so that hundreds of keychains can be made quickly.
    public var testWeakKDF: Bool { variables["LOCKET_TEST_WEAK_KDF"] == "1" }
}
