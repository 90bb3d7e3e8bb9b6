import Glibc
import LocketSystem

/// The programs locket runs beside itself, each in a process of its own so
/// that `locket` never links their libraries: the PostgreSQL helper (libpq)
/// and the Secret Service provider (libdbus-1). They are where `make
/// install` puts them, `../libexec/locket/NAME` from the running executable,
/// else beside it (the build tree), and run only when nobody but root or
/// this user can replace them: they see passwords and secrets.
public enum CompanionExecutable {
    /// Why a file must not be run as a companion.
    public enum Refusal: Equatable, Sendable {
        /// Nothing is there.
        case missing
        /// Not a regular file with an execute bit.
        case notExecutable
        /// Owned, or writable, by a user other than root and this one.
        case replaceable
    }

    /// The first of `../libexec/locket/NAME` and `NAME` beside the running
    /// executable that may be run (`refusal(at:)` is nil); nil when neither may.
    public static func find(_ name: String) -> String? {
        guard let executable = readLink("/proc/self/exe"), let slash = executable.lastIndex(of: "/") else { return nil }
        let directory = String(executable[..<slash])
        let parent = directory.lastIndex(of: "/").map { String(directory[..<$0]) } ?? ""
        return ["\(parent)/libexec/locket/\(name)", "\(directory)/\(name)"].first { refusal(at: $0) == nil }
    }

    /// Why `path` must not be run as a companion; nil when it may.
    public static func refusal(at path: String) -> Refusal? {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing }
        switch PrivateFile.Rule(kind: S_IFREG, rootMayOwn: true, ownerOnly: 0o022).violation(info) {
        case .kind: return .notExecutable
        case .owner, .mode: return .replaceable
        case nil: return info.st_mode & 0o111 != 0 ? nil : .notExecutable
        }
        return nil
    }
}
