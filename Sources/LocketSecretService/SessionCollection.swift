import Glibc
import LocketCore
import LocketSupport

/// The `session` collection, as gnome-keyring keeps one: items that live as
/// long as the provider (libsecret's SECRET_COLLECTION_SESSION, `secret-tool
/// store --collection=session`), at /org/freedesktop/secrets/collection/session
/// and the alias `session`, never locked.
///
/// It is a keychain without a password in a private directory of this
/// provider's own on tmpfs (`$XDG_RUNTIME_DIR`, else /dev/shm), with a device
/// key, generation mirror and session of its own there, made at its first
/// use: its items are sealed as every item is, nothing of it reaches the
/// user's disk or state directory, and the directory is removed when the
/// provider stops (and, after a provider that was killed, by the next one).
enum SessionCollection {
    static let name = "session"
    private static let prefix = "locket-session-"

    /// The collection, its directory made (0700, by mkdtemp: safe in a shared
    /// /dev/shm); nil when no such directory can be made. Directories left by
    /// providers no longer running are removed first.
    static func make(environment: Environment, log: (String) -> Void) -> Provider.Collection? {
        let runtime = (try? environment["XDG_RUNTIME_DIR"]).flatMap { $0 }
        let base = runtime.flatMap { $0.hasPrefix("/") && access($0, W_OK) == 0 ? $0 : nil } ?? "/dev/shm"
        removeStale(in: base)
        var template = Array((base + "/" + prefix + "\(getpid())-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            log("no session collection: cannot make a directory in \(base): \(Errno(errno))")
            return nil
        }
        let directory = String(cString: made)
        let own = Environment(["HOME": directory, "XDG_DATA_HOME": directory, "XDG_STATE_HOME": directory,
                               "XDG_RUNTIME_DIR": directory, "LOCKET_SESSION": "dir"])
        return Provider.Collection(name: name, keychainPath: directory + "/session.keychain", label: name,
                                   session: Provider.Collection.Session(directory: directory, environment: own))
    }

    /// Makes the keychain the first time it is opened.
    static func prepare(_ session: Provider.Collection.Session, keychainPath: String) throws {
        guard access(keychainPath, F_OK) != 0 else { return }
        try Keychain.create(at: keychainPath, password: nil, environment: session.environment)
    }

    /// Removes the directory and everything in it.
    static func remove(_ directory: String) {
        removeTree(directory)
    }

    /// `locket-session-PID-*` directories of this user whose provider is gone.
    private static func removeStale(in base: String) {
        guard let stream = opendir(base) else { return }
        var stale: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            guard name.hasPrefix(prefix), let pid = Int32(name.dropFirst(prefix.count).prefix { $0 != "-" }), pid != getpid() else { continue }
            var info = stat()
            guard lstat(base + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { stale.append(base + "/" + name) }
        }
        closedir(stream)
        for directory in stale { removeTree(directory) }
    }

    /// A directory of ours, depth first; links are removed, never followed.
    private static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFDIR, let stream = opendir(path) {
            var names: [String] = []
            while let entry = readdir(stream) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(stream)
            for name in names { removeTree(path + "/" + name) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}
