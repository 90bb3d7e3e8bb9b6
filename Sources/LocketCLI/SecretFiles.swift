import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

/// `exec --file NAME=REF`: each secret in a mode-600 file, in a private
/// mode-700 directory on tmpfs that locket removes when the command exits.
///
/// Where: `$XDG_RUNTIME_DIR/locket-exec-UID/` when that is tmpfs and the
/// user's alone (`RuntimeDirectory`), else `/dev/shm/locket-exec-UID/`.
/// /dev/shm is shared with other users, so nothing there is trusted: the
/// parent must be a directory owned by this user with no access for
/// others, and each run makes its own directory
/// with mkdtemp(3) (a new name, never an existing one). The directory's
/// name records who made it: `PIDNS.PID.STARTTIME.XXXXXX` (pid namespace,
/// process id, start time in clock ticks since boot), so that a later run
/// can tell a directory whose locket was killed (SIGKILL leaves no chance to
/// clean up) from one still in use, even after the pid is reused.
final class SecretFiles {
    /// The private directory.
    let directory: String
    /// NAME and the path of its file, in the order given.
    private(set) var paths: [(name: String, path: String)] = []
    private var removed = false

    /// Creates the directory and writes each secret to `directory/NAME`.
    init(_ files: [(name: String, secret: SecureBytes)], environment: Environment) throws {
        let parent = try SecretFiles.parent(environment)
        var template = Array("\(parent)/\(SecretFiles.identity()).XXXXXX".utf8CString)
        let made = try template.withUnsafeMutableBufferPointer { buffer in
            try pointerOrErrno("mkdtemp") { mkdtemp(buffer.baseAddress!) }.get { KeychainError(.io, "cannot create a directory in \(parent): \($0)") }
        }
        directory = String(cString: made)
        do {
            for (name, secret) in files {
                let path = "\(directory)/\(name)"
                let fd = try valueOrErrno("open") { open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
                    .get { KeychainError(.io, "cannot create \(path): \($0)") }
                defer { close(fd) }
                try secret.withUnsafeBytes { writeAll(fd, $0) }.get { KeychainError(.io, "cannot write \(path): \($0)") }
                paths.append((name, path))
            }
        } catch {
            remove()
            throw error
        }
    }

    deinit { remove() }

    /// Removes the files and the directory; once.
    func remove() {
        guard !removed else { return }
        removed = true
        let parentFD = open(SecretFiles.directory(of: directory), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard parentFD >= 0 else { return }
        defer { close(parentFD) }
        SecretFiles.removeDirectory(String(directory.split(separator: "/").last ?? ""), in: parentFD)
    }

    // MARK: - Where

    /// The parent of the private directories: `locket-exec-UID` in a trusted
    /// `$XDG_RUNTIME_DIR` on tmpfs, else in /dev/shm (RuntimeDirectory).
    private static func parent(_ environment: Environment) throws -> String {
        try RuntimeDirectory.privateParent(environment, name: parentPrefix, memoryOnly: true)
    }

    private static let parentPrefix = "locket-exec"
    private static func parentName() -> String { "\(parentPrefix)-\(geteuid())" }

    private static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return String(path[..<slash])
    }

    // MARK: - Who

    /// `PIDNS.PID.STARTTIME` of this process.
    private static func identity() -> String {
        "\(pidNamespace()).\(getpid()).\(startTime(of: getpid()) ?? 0)"
    }

    /// The inode of this process's pid namespace (`pid:[4026531836]`): a pid
    /// means nothing in another namespace (two containers sharing /dev/shm).
    private static func pidNamespace() -> UInt64 {
        guard let text = readLink("/proc/self/ns/pid") else { return 0 }
        return UInt64(text.filter(\.isNumber)) ?? 0
    }

    /// When the process started (`processStartTime`).
    private static func startTime(of pid: pid_t) -> UInt64? { processStartTime(pid) }

    /// Whether the process that made a directory is still running: the pid
    /// exists and started when the directory's name says.
    private static func isRunning(_ pid: pid_t, startedAt start: UInt64) -> Bool {
        if nothingOrErrno("kill", { kill(pid, 0) }).error?.code == ESRCH { return false }
        // Alive, or another user's process (EPERM): compare start times; if
        // they can't be read, keep the directory.
        guard let current = startTime(of: pid) else { return true }
        return current == start
    }

    // MARK: - Cleaning up after a killed locket

    /// Removes the directories of runs that were killed before they could
    /// clean up. Cheap when there is nothing to do: one lstat(2) per place
    /// (in C: building the paths in Swift cost `find` more than the check).
    static func removeAbandoned(_ environment: Environment) {
        // A runtime directory that is not UTF-8 is refused where it is used; here it has nothing to clean.
        if let runtime = try? environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/"), locket_exec_directories_present(runtime) != 0 {
            sweep(runtime + "/" + parentName())
        }
        if locket_exec_directories_present("/dev/shm") != 0 { sweep("/dev/shm/" + parentName()) }
    }

    private static func sweep(_ parent: String) {
        guard let directory = try? PrivateFile(parent, rule: .privateDirectory) else { return }
        let parentFD = directory.descriptor
        let namespace = pidNamespace()
        for name in entries(of: parentFD) {
            let parts = name.split(separator: ".")
            guard parts.count == 4, UInt64(parts[0]) == namespace, let pid = pid_t(parts[1]), let start = UInt64(parts[2]),
                  pid != getpid(), !isRunning(pid, startedAt: start) else { continue }
            removeDirectory(name, in: parentFD)
        }
        _ = directory.close()
    }

    /// The names in a directory, without `.` and `..`; `fd` stays open.
    private static func entries(of fd: Int32) -> [String] {
        let copy = dup(fd)
        guard copy >= 0, let dir = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return []
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Unlinks the files in `parentFD/name` (never following a link, never
    /// descending: what the command made below it stays, and so does the
    /// directory then), then the directory. Only a directory of this user's.
    private static func removeDirectory(_ name: String, in parentFD: Int32) {
        guard let directory = try? PrivateFile(name, in: parentFD, rule: .ownDirectory) else { return }
        for entry in entries(of: directory.descriptor) { _ = unlinkat(directory.descriptor, entry, 0) }
        _ = directory.close()
        _ = unlinkat(parentFD, name, AT_REMOVEDIR)
    }

}
