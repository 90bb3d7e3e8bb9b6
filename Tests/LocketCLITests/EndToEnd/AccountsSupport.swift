import Foundation
import LocketSystem
import XCTest

#if canImport(Glibc)
import Glibc
#endif

// Support for tests that need more than one user on the machine (issue 11):
// real local accounts made with useradd(8), and locket run as one of them
// through setpriv(1). CI runs the suite as root on a fresh machine, so they
// run there; elsewhere they skip with the reason.

/// A local account made for this test process.
struct LocalAccount {
    let name: String
    let uid: uid_t
    let gid: gid_t
}

enum LocalAccounts {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var made: [String: LocalAccount] = [:]

    /// The account playing `role` ("victim", "other", ...), made on first use
    /// and deleted by `removeAll()` (each class that uses accounts calls it
    /// in its class tearDown). Throws XCTSkip when the tests cannot create
    /// users (not root, or no useradd/setpriv).
    static func account(_ role: String) throws -> LocalAccount {
        guard geteuid() == 0 else {
            throw XCTSkip("running as uid \(geteuid()), not root: this test needs a second local account (useradd), which only root can create")
        }
        for tool in ["/usr/sbin/useradd", "/usr/sbin/userdel", "/usr/bin/setpriv"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw XCTSkip("\(tool) is missing: this test needs a second local account")
        }
        lock.lock()
        defer { lock.unlock() }
        if let account = made[role] { return account }
        let name = "lkt-\(role.prefix(8))-\(getpid())"
        let result = Spawn.run("/usr/sbin/useradd", ["--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                                                      "--shell", "/usr/sbin/nologin", name],
                               environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"], input: .devNull, timeout: 30)
        guard result.status == 0, let entry = getpwnam(name) else {
            throw XCTSkip("useradd \(name) failed: \(result.err)")
        }
        let account = LocalAccount(name: name, uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
        made[role] = account
        return account
    }

    /// Deletes every account made so far (and its group).
    static func removeAll() {
        lock.lock()
        defer { lock.unlock() }
        for account in made.values {
            let result = Spawn.run("/usr/sbin/userdel", [account.name], environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"],
                                   input: .devNull, timeout: 30)
            if result.status != 0 { print("userdel \(account.name) failed: \(result.err)") }
        }
        made = [:]
    }

    /// Runs `program` as `account` with exactly `environment`.
    static func run(as account: LocalAccount, _ program: String, _ arguments: [String], environment: [String: String],
                    input: Input = .devNull, timeout: Double = EndToEndCase.timeout) -> RunResult {
        let result = Spawn.run("/usr/bin/setpriv", ["--reuid=\(account.uid)", "--regid=\(account.gid)", "--clear-groups", "--", program] + arguments,
                               environment: environment, input: input, timeout: timeout)
        // The arguments locket saw, for failure messages.
        var shown = result
        shown.arguments = ["(as \(account.name))"] + arguments
        return shown
    }
}

/// A place other accounts can reach: a copy of the binary under test, and a
/// private HOME for each account that runs it. Removed by `remove()`.
final class SharedScratch {
    let root: String
    let binary: String

    init(binary source: String) throws {
        var template = Array("/tmp/locket-accounts.XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { throw POSIXError(.EIO) }
        root = String(cString: made)
        chmod(root, 0o755)
        binary = root + "/locket"
        try FileManager.default.copyItem(atPath: source, toPath: binary)
        chmod(binary, 0o755)
    }

    /// A HOME owned by `account`, mode 700, with the XDG directories of a session of its own.
    func home(for account: LocalAccount) -> String {
        let home = root + "/home-" + account.name
        if mkdir(home, 0o700) == 0 {
            chown(home, account.uid, account.gid)
            let run = home + "/run"
            mkdir(run, 0o700)
            chown(run, account.uid, account.gid)
        }
        return home
    }

    /// A new directory under /tmp that everyone can write, sticky, like /tmp itself.
    func sharedDirectory(_ name: String) -> String {
        let path = root + "/" + name
        mkdir(path, 0o755)
        chmod(path, 0o1777)
        return path
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: root)
    }
}

/// Files as another user leaves them: made here (as root), then given to that user.
enum Planted {
    /// A regular file with `bytes`, owned by `account`, mode `mode`.
    static func file(_ path: String, _ bytes: [UInt8] = [], by account: LocalAccount, mode: mode_t = 0o666,
                     file: StaticString = #filePath, line: UInt = #line) {
        let opened = valueOrErrno("open") { open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) }
        guard case .success(let fd) = opened else { return XCTFail("cannot create \(path): \(opened.error!)", file: file, line: line) }
        bytes.withUnsafeBytes { raw in if let base = raw.baseAddress { _ = write(fd, base, raw.count) } }
        close(fd)
        chown(path, account.uid, account.gid)
        chmod(path, mode)
    }

    /// A FIFO owned by `account`, mode `mode`.
    static func fifo(_ path: String, by account: LocalAccount, mode: mode_t = 0o666, file: StaticString = #filePath, line: UInt = #line) {
        if let failure = nothingOrErrno("mkfifo", { mkfifo(path, 0o600) }).error { return XCTFail("cannot create \(path): \(failure)", file: file, line: line) }
        chown(path, account.uid, account.gid)
        chmod(path, mode)
    }

    /// A directory owned by `account`, mode `mode`.
    static func directory(_ path: String, by account: LocalAccount, mode: mode_t = 0o777, file: StaticString = #filePath, line: UInt = #line) {
        if let failure = nothingOrErrno("mkdir", { mkdir(path, 0o700) }).error { return XCTFail("cannot create \(path): \(failure)", file: file, line: line) }
        chown(path, account.uid, account.gid)
        chmod(path, mode)
    }

    /// Sets the access time an hour before the modification time, so that
    /// any read of the file shows (relatime updates an access time older than
    /// the modification time).
    static func ageAccessTime(_ path: String) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        var times = [timespec(tv_sec: st.st_mtim.tv_sec - 3600, tv_nsec: 0), st.st_mtim]
        utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
    }

    /// Size, mode, owner, modification and access times, to show a file was left alone.
    static func fingerprint(_ path: String) -> String {
        var st = stat()
        guard lstat(path, &st) == 0 else { return "missing" }
        return "size \(st.st_size) mode \(String(st.st_mode, radix: 8)) uid \(st.st_uid) "
            + "mtime \(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec) atime \(st.st_atim.tv_sec).\(st.st_atim.tv_nsec)"
    }
}
