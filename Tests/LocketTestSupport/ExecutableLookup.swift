import Foundation

/// The first executable `name` in the directories of the test's PATH
/// (`/usr/bin:/bin` when it is unset), or nil: how the tests find the real
/// tools they drive (gpg, pass, keepassxc-cli, openssl).
public func executableOnPath(_ name: String) -> String? {
    for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let path = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}
