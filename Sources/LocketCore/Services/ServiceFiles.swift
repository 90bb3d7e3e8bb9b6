import Glibc
import LocketSupport

/// Reading and writing the formats of the files the Secret Service switch
/// touches: D-Bus service files (their `Exec=` is split as a shell would),
/// systemd units (`ExecStart=`, with `%` specifiers and `$` variables), and
/// which service file the session bus would start for a name.
public enum ServiceFiles {
    /// `Exec=` of a D-Bus service file: single quotes where needed (libdbus
    /// splits it as a POSIX shell does, without expansions).
    static func dbusCommandLine(_ words: [String]) -> String {
        words.map { word in
            plain(word) ? word : "'" + word.replacing(every: "'", with: "'\\''") + "'"
        }.joined(separator: " ")
    }

    /// `ExecStart=` of a systemd unit: double quotes with C escapes where
    /// needed, and `%` and `$` doubled (systemd would expand them).
    static func systemdCommandLine(_ words: [String]) -> String {
        words.map { word in
            let escaped = word.replacing(every: "%", with: "%%").replacing(every: "$", with: "$$")
            guard !plain(escaped) else { return escaped }
            var quoted = "\""
            for scalar in escaped.unicodeScalars {
                switch scalar {
                case "\\": quoted += "\\\\"
                case "\"": quoted += "\\\""
                case "\n": quoted += "\\n"
                case "\t": quoted += "\\t"
                default: quoted.unicodeScalars.append(scalar)
                }
            }
            return quoted + "\""
        }.joined(separator: " ")
    }

    private static func plain(_ word: String) -> Bool {
        !word.isEmpty && word.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || "/._-+=:,@%$".utf8.contains(byte)
        }
    }

    // MARK: - Which file the bus starts

    /// A D-Bus service file that names a bus name.
    public struct ServiceFile: Sendable, Equatable {
        public let path: String
        public let exec: String
        public let systemdService: String?
        public var isLocket: Bool { ProviderActivation.state(of: path) == .locket }
    }

    /// The file the session bus would start for `name`: the first directory
    /// (in `directories`' order) holding a `*.service` file whose `Name=` is
    /// it, that file first in its directory when named after it.
    public static func activation(of name: String, in directories: [String]) -> ServiceFile? {
        for directory in directories {
            guard let stream = opendir(directory) else { continue }
            var names: [String] = []
            while let entry = readdir(stream) {
                let entryName = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if entryName.hasSuffix(".service") { names.append(entryName) }
            }
            closedir(stream)
            names.sort { ($0 == name + ".service" ? 0 : 1, $0) < ($1 == name + ".service" ? 0 : 1, $1) }
            for file in names {
                let path = directory + "/" + file
                guard let keys = keyFile(path, group: "D-BUS Service"), keys["Name"] == name else { continue }
                return ServiceFile(path: path, exec: keys["Exec"] ?? "", systemdService: keys["SystemdService"])
            }
        }
        return nil
    }

    /// Whether an `Exec=` line runs `locket secret-service`.
    static func startsLocket(_ exec: String) -> Bool {
        let words = exec.split(separator: " ")
        return words.count >= 2 && (words[0] == "locket" || words[0].hasSuffix("/locket")) && words[1] == "secret-service"
    }

    /// The keys of one group of a small key file (`[Group]`, `Key=Value`); nil when unreadable.
    static func keyFile(_ path: String, group: String) -> [String: String]? {
        guard let bytes = try? FileIO.readSmall(path, limit: 1 << 16) else { return nil }
        var keys: [String: String] = [:]
        var inGroup = false
        for raw in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let line = String(raw).trimmingBlanks()
            if line.hasPrefix("#") || line.isEmpty { continue }
            if line.hasPrefix("[") {
                inGroup = line == "[\(group)]"
                continue
            }
            guard inGroup, let equals = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<equals]).trimmingBlanks()
            if keys[key] == nil { keys[key] = String(line[line.index(after: equals)...]).trimmingBlanks() }
        }
        return keys
    }

    // MARK: - gnome-keyring's user unit

    /// A drop-in for gnome-keyring-daemon.service (the system-wide unit
    /// pam_gnome_keyring's socket starts) that runs it with its other
    /// components but not `secrets`; nil when there is no such unit or its
    /// `ExecStart=` names no components to edit.
    static func gnomeKeyringDropIn(_ paths: ProviderActivation.Paths) -> String? {
        for directory in paths.systemUnitDirectories {
            guard let keys = keyFile(directory + "/gnome-keyring-daemon.service", group: "Service") else { continue }
            guard let exec = keys["ExecStart"], let range = exec.firstRange(matching: "--components=") else { return nil }
            let rest = exec[range.upperBound...]
            let end = rest.firstIndex(where: { $0 == " " || $0 == "\t" }) ?? rest.endIndex
            let value = rest[..<end]
            let list = String(value).replacing(every: "\"", with: "").replacing(every: "'", with: "").split(separator: ",")
            guard list.contains("secrets") else { return nil }
            let kept = list.filter { $0 != "secrets" }.joined(separator: ",")
            // Components left empty would mean gnome-keyring's defaults, secrets among them.
            guard !kept.isEmpty else { return nil }
            let edited = exec[..<range.upperBound] + kept + rest[end...]
            return "[Service]\nExecStart=\nExecStart=\(edited)\n"
        }
        return nil
    }
}
