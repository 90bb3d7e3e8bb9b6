import Glibc
import LocketSupport

/// Where locket's files are, resolved from environment variables (SPEC §2),
/// and the time it runs in. The engine reads only the Environment the CLI
/// hands it (`.process`, or a fixed set in tests).
public struct Environment: Sendable {
    private enum Source: Sendable {
        case process
        case given([String: String])
    }

    private let source: Source

    /// The clock and the sleeper of everything that depends on time: item
    /// dates, a session's inactivity timeout, the wrong-password delay, the
    /// offline cache's age. The system's; a test sets its own, so that it
    /// sets the time instead of waiting for it.
    public var time: TimeSource = .system

    /// A fixed set of variables (tests, fuzzing).
    public init(_ variables: [String: String], time: TimeSource = .system) {
        source = .given(variables)
        self.time = time
    }

    private init(source: Source) { self.source = source }

    /// The process's own environment, read with getenv(3) on demand: a command
    /// looks at a handful of variables, and copying all of them into a
    /// dictionary first cost more than the rest of its start-up (issue 7).
    public static let process = Environment(source: .process)

    /// The variable's value, nil when it is not set. A value that is not
    /// valid UTF-8 is refused (errSecParam, naming the variable): Swift would
    /// silently replace its bad bytes, and a path must be used as given or not at all.
    public subscript(name: String) -> String? {
        get throws {
            switch source {
            case .process:
                guard let p = getenv(name) else { return nil }
                let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(p).assumingMemoryBound(to: UInt8.self), count: strlen(p))
                guard let value = String(validating: bytes, as: UTF8.self) else {
                    throw KeychainError(.param, "\(name) is not valid UTF-8")
                }
                return value
            case .given(let variables):
                return variables[name]
            }
        }
    }

    /// One variable as the process holds it: bytes, which need not be UTF-8.
    public struct Variable: Sendable, Equatable {
        public var name: [UInt8]
        public var value: [UInt8]

        public init(name: [UInt8], value: [UInt8]) {
            self.name = name
            self.value = value
        }

        /// The name as text; nil when it is not valid UTF-8.
        public var nameText: String? { String(validating: name, as: UTF8.self) }
    }

    /// Every variable, sorted by name: what `exec` hands on, byte for byte
    /// (variables locket does not interpret are none of its business).
    public var all: [Variable] {
        var out: [Variable] = []
        switch source {
        case .given(let variables):
            out = variables.map { Variable(name: Array($0.key.utf8), value: Array($0.value.utf8)) }
        case .process:
            // The first of two same-named entries wins, as with getenv(3).
            var seen = Set<[UInt8]>()
            var p = environ
            while let entry = p.pointee {
                let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(entry).assumingMemoryBound(to: UInt8.self), count: strlen(entry))
                if let eq = bytes.firstIndex(of: UInt8(ascii: "=")), seen.insert(Array(bytes[..<eq])).inserted {
                    out.append(Variable(name: Array(bytes[..<eq]), value: Array(bytes[(eq + 1)...])))
                }
                p += 1
            }
        }
        return out.sorted { $0.name.lexicographicallyPrecedes($1.name) }
    }

    /// An XDG variable's value when it is an absolute path; relative ones are ignored, as the XDG spec says.
    private func xdg(_ name: String, default suffix: String) throws -> String {
        if let value = try self[name], value.hasPrefix("/") { return value }
        guard let home = try self["HOME"], home.hasPrefix("/") else {
            throw KeychainError(.param, "HOME is not set to an absolute path, and neither is \(name)")
        }
        return home + suffix
    }

    /// `$XDG_DATA_HOME/locket`.
    public func dataDirectory() throws -> String { try xdg("XDG_DATA_HOME", default: "/.local/share") + "/locket" }

    /// The keychain file for `-k PATH|NAME`, `LOCKET_KEYCHAIN`, or `login`.
    public func keychainPath(_ argument: String?) throws -> String {
        let spec = try argument ?? self["LOCKET_KEYCHAIN"].flatMap { $0.isEmpty ? nil : $0 } ?? "login"
        if spec.contains("/") { return spec }
        guard !spec.isEmpty, spec != ".", spec != ".." else { throw KeychainError(.param, "'\(spec)' is not a keychain name") }
        return try dataDirectory() + "/" + spec + ".keychain"
    }

    /// `$XDG_STATE_HOME`: the device secret and the generation mirrors live in its `locket/`.
    public func stateDirectory() throws -> String { try xdg("XDG_STATE_HOME", default: "/.local/state") }

    /// The device secret file.
    public func deviceSecretPath() throws -> String {
        if let path = try self["LOCKET_DEVICE_KEY"], !path.isEmpty { return path }
        return try stateDirectory() + "/locket/device.key"
    }

    /// `LOCKET_SESSION`: nil lets locket choose (keyring, then directory).
    public func sessionBackend() throws -> SessionStore.Backend? {
        switch try self["LOCKET_SESSION"] {
        case nil, "": return nil
        case "keyring": return .keyring
        case "dir": return .directory
        case let other?: throw KeychainError(.param, "LOCKET_SESSION must be keyring or dir, not '\(Printable.clip(other))'")
        }
    }

    /// The tmpfs directory for sessions when the kernel keyring is not used.
    public func sessionDirectory(uid: UInt32) throws -> String {
        if let runtime = try self["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { return runtime + "/locket" }
        return "/dev/shm/locket-\(uid)"
    }
}
