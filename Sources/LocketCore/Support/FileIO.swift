import Glibc
import LocketSupport

/// The few file operations locket needs, straight over the C library, each
/// failing with errSecIO and the path.
package enum FileIO {
    package static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// The size of the file at `path` (not following a link); nil when there is none.
    static func size(_ path: String) -> Int? {
        var st = stat()
        return lstat(path, &st) == 0 ? Int(st.st_size) : nil
    }

    package static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// `mkdir -p` with mode 0700 for what it creates.
    package static func makeDirectories(_ path: String) throws {
        var st = stat()
        if stat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFDIR else { throw KeychainError(.io, "\(path) is not a directory") }
            return
        }
        let parent = directory(of: path)
        if parent != path && parent != "." && parent != "/" { try makeDirectories(parent) }
        if let failure = nothingOrErrno("mkdir", { mkdir(path, 0o700) }).error {
            guard failure.code == EEXIST else { throw KeychainError(.io, "cannot create \(path): \(failure)") }
            return
        }
        // What is made in it next (a device secret, a keychain) is made
        // durable by a sync of this directory; this makes its name durable.
        try syncDirectory(parent)
    }

    /// Makes the names in `path` (files linked, renamed, removed in it)
    /// survive a power loss: without it the kernel may write a file's data
    /// and still lose the name it was given (issue 30, the power-loss check).
    static func syncDirectory(_ path: String) throws {
        let fd: Int32
        switch valueOrErrno("open", { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }) {
        case .success(let opened): fd = opened
        // A directory one may write but not read (a drop box) can't be
        // synced: durability there is the file system's, not a refusal.
        case .failure(let failure) where failure.code == EACCES: return
        case .failure(let failure): throw KeychainError(.io, "cannot open the directory \(path): \(failure)")
        }
        defer { close(fd) }
        try nothingOrErrno("fsync") { fsync(fd) }.get { KeychainError(.io, "cannot sync the directory \(path): \($0)") }
    }

    /// Reads a small file completely; nil when it does not exist.
    package static func readSmall(_ path: String, limit: Int) throws -> [UInt8]? {
        let fd: Int32
        switch valueOrErrno("open", { open(path, O_RDONLY | O_CLOEXEC) }) {
        case .success(let opened): fd = opened
        case .failure(let failure) where failure.code == ENOENT: return nil
        case .failure(let failure): throw KeychainError(.io, "cannot read \(path): \(failure)")
        }
        defer { close(fd) }
        var out = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while out.count <= limit {
            let n = try buffer.withUnsafeMutableBytes { raw in
                try valueOrErrno("read") { read(fd, raw.baseAddress, raw.count) }.get { KeychainError(.io, "cannot read \(path): \($0)") }
            }
            if n == 0 { break }
            out.append(contentsOf: buffer[0..<n])
        }
        guard out.count <= limit else { throw KeychainError(.io, "\(path) is larger than \(ByteSize.text(limit))") }
        return out
    }

    /// Opens `path` for reading when it is this user's own private regular
    /// file (no link followed, no FIFO waited on); nil when it does not exist.
    /// `what` names it in the refusals ("the offline cache").
    package static func openPrivate(_ path: String, what: String) throws -> PrivateFile? {
        do throws(PrivateFile.Failure) {
            return try PrivateFile(path, rule: .privateFile)
        } catch .missing {
            return nil
        } catch .symbolicLink {
            throw KeychainError(.io, "cannot read \(what) \(path): \(Errno(ELOOP))")
        } catch .unreadable(let failure) {
            throw KeychainError(.io, "cannot read \(what) \(path): \(failure)")
        } catch .refused(.kind) {
            throw KeychainError(.io, "\(what) \(path) is not a regular file")
        } catch .refused(.owner(let uid)) {
            throw KeychainError(.io, "\(what) \(path) belongs to another user (uid \(uid))")
        } catch .refused(.mode(let mode)) {
            throw KeychainError(.io, "\(what) \(path) is open to other users (mode \(String(mode & 0o777, radix: 8))); run chmod 600 on it")
        }
    }

    /// Fills `buffer` from `fd`, retrying short reads; false at an early end or an error.
    package static func readExactly(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Bool {
        (try? readFully(fd, into: buffer).get()) == buffer.count
    }

    /// Reads a secret of exactly `expected` bytes into guarded memory; nil when absent.
    package static func readSecret(_ path: String, expected: Int, what: String) throws -> SecureBytes? {
        guard let file = try openPrivate(path, what: what) else { return nil }
        return try file.closeAfter { file in
            let out = try SecureBytes(count: expected)
            guard file.size == expected, out.withUnsafeMutableBytes({ (try? file.read(into: $0).get()) == $0.count }) else {
                throw KeychainError(.decode, "\(what) \(path) is not \(expected) bytes long")
            }
            return out
        }
    }

    /// Creates a new file (never follows or replaces an existing one) with
    /// mode 0600; one it could not write whole (a full disk, a file size
    /// limit) is removed again.
    package static func writeNew(_ path: String, _ bytes: UnsafeRawBufferPointer) throws {
        let fd = try valueOrErrno("open") { open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
            .get { KeychainError(.io, "cannot create \(path): \($0)") }
        defer { close(fd) }
        do {
            try writeAll(fd, bytes, path: path)
            try nothingOrErrno("fsync") { fsync(fd) }.get { KeychainError(.io, "cannot write \(path): \($0)") }
        } catch {
            unlink(path)
            throw error
        }
    }

    /// Creates an empty file with exactly `mode`, whatever the umask (which
    /// can take bits away at creation; fchmod gives back those asked for):
    /// files are made with explicit modes, the process's umask is the
    /// caller's (an app's, with the `Security` module) and is never set.
    static func createEmpty(_ path: String, mode: mode_t) throws {
        let fd = try valueOrErrno("open") { open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode) }
            .get { KeychainError(.io, "cannot create \(path): \($0)") }
        defer { close(fd) }
        try nothingOrErrno("fchmod") { fchmod(fd, mode) }.get { KeychainError(.io, "cannot set the mode of \(path): \($0)") }
    }

    /// Replaces `path` atomically (temporary file and rename), mode 0600, and
    /// durably: the file is synced before the rename and its directory after,
    /// so a power loss leaves the old file or the new one, never an empty one
    /// under the name (a remote device's trust record, the offline cache).
    package static func writeAtomically(_ path: String, _ bytes: UnsafeRawBufferPointer) throws {
        try writeAtomically(path, in: AT_FDCWD, bytes, path: path, durable: true)
        try syncDirectory(directory(of: path))
    }

    /// `writeAtomically` inside an open directory: `name` is replaced by
    /// rename in `directory`, never by following a path; `path` names it in
    /// messages. Not `durable` where the directory is memory (the session's
    /// tmpfs): there a power loss takes the directory too.
    package static func writeAtomically(_ name: String, in directory: Int32, _ bytes: UnsafeRawBufferPointer, path: String,
                                durable: Bool) throws {
        let temporary = name + ".tmp.\(getpid())"
        unlinkat(directory, temporary, 0)
        let fd = try valueOrErrno("openat") { openat(directory, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
            .get { KeychainError(.io, "cannot create \(path).tmp: \($0)") }
        do {
            try writeAll(fd, bytes, path: path)
            if durable { try nothingOrErrno("fsync") { fsync(fd) }.get { KeychainError(.io, "cannot write \(path): \($0)") } }
            close(fd)
        } catch {
            close(fd)
            unlinkat(directory, temporary, 0)
            throw error
        }
        if let failure = nothingOrErrno("renameat", { renameat(directory, temporary, directory, name) }).error {
            unlinkat(directory, temporary, 0)
            throw KeychainError(.io, "cannot replace \(path): \(failure)")
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        try LocketSupport.writeAll(fd, bytes).get { KeychainError(.io, "cannot write \(path): \($0)") }
    }

    /// The largest file this process may write (RLIMIT_FSIZE, `ulimit -f`)
    /// in bytes; nil when there is no limit.
    static var fileSizeLimit: Int? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        return Int(clamping: limit.rlim_cur)
    }

    /// Who besides the user (and root) can add, replace or delete files in a directory.
    enum DirectoryAccess: Equatable {
        /// Nobody: the directory is the user's or root's, and only its owner can write it.
        case privateToOwner
        /// Others can add files but, sticky and the user's or root's, never
        /// rename or delete another user's (/tmp, /dev/shm): a name that is
        /// already ours stays ours.
        case sharedSticky
        /// Others can replace or delete any file in it (mode given).
        case writableByOthers(mode_t)
        /// Another user owns it, and an owner can replace any file in it (uid given).
        case ownedByAnother(uid_t)

        /// Why locket refuses `what` in `directory` (someone else could replace
        /// it there); nil when it does not.
        func refusal(_ directory: String, what: String) -> String? {
            switch self {
            case .privateToOwner, .sharedSticky:
                nil
            case .writableByOthers(let mode):
                "\(directory) is writable by other users (mode \(String(mode, radix: 8))); locket refuses \(what) there; run chmod go-w on it"
            case .ownedByAnother(let uid):
                "\(directory) belongs to another user (uid \(uid)), who can replace any file in it; locket refuses \(what) there"
            }
        }
    }

    /// How `directory` may be written by others; `.privateToOwner` when it
    /// cannot be examined (the open that follows then reports why).
    static func access(ofDirectory directory: String) -> DirectoryAccess {
        var st = stat()
        guard stat(directory, &st) == 0 else { return .privateToOwner }
        if !PrivateFile.isOwn(st, orRoot: true) { return .ownedByAnother(st.st_uid) }
        guard st.st_mode & 0o022 != 0 else { return .privateToOwner }
        return st.st_mode & S_ISVTX != 0 ? .sharedSticky : .writableByOthers(st.st_mode & 0o777)
    }

    /// Refuses a keychain path that is a symlink, not a regular file, or
    /// writable by group or others: such a file could be swapped or edited
    /// by someone else between our reads. In a sticky shared directory the
    /// file must also be the user's own. Returns whether the directory is
    /// shared, where every file SQLite opens beside it must be checked too.
    @discardableResult
    package static func checkPrivateFile(_ path: String, what: String) throws -> Bool {
        let parent = directory(of: path)
        // Whoever can write the directory can replace the file or plant its -wal
        // next to it; a sticky directory (like /tmp) only lets them add their own files.
        let access = access(ofDirectory: parent)
        if let refusal = access.refusal(parent, what: "a \(what)") { throw KeychainError(.io, refusal) }
        let shared = access == .sharedSticky
        var st = stat()
        guard lstat(path, &st) == 0 else { return shared }
        if st.st_mode & S_IFMT == S_IFLNK { throw KeychainError(.io, "\(path) is a symbolic link; locket refuses to follow it for a \(what)") }
        guard st.st_mode & S_IFMT == S_IFREG else { throw KeychainError(.io, "\(path) is not a regular file") }
        if st.st_mode & 0o022 != 0 {
            throw KeychainError(.io, "\(path) is writable by other users (mode \(String(st.st_mode & 0o777, radix: 8))); run chmod 600 on it")
        }
        if shared && !PrivateFile.isOwn(st) {
            throw KeychainError(.io, "\(path) belongs to another user (uid \(st.st_uid)) in the shared directory \(parent); locket refuses a \(what) that is not your own there")
        }
        return shared
    }

    /// Makes sure `path`, in a shared sticky directory, is this user's own
    /// private regular file before anything opens it: creates it empty (0600)
    /// when missing, else checks it. Once it exists and is ours, nobody else
    /// can delete or replace it there, so the check holds for what opens it next.
    /// Returns whether it created the file.
    static func claimInSharedDirectory(_ path: String) throws -> Bool {
        var st = stat()
        if let missing = nothingOrErrno("lstat", { lstat(path, &st) }).error {
            guard missing.code == ENOENT else { throw KeychainError(.io, "cannot examine \(path): \(missing)") }
            switch valueOrErrno("open", { open(path, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600) }) {
            case .success(let fd):
                close(fd)
                return true
            case .failure(let failure) where failure.code == EEXIST:
                // Someone made it between the two calls: judge what they made.
                try nothingOrErrno("lstat") { lstat(path, &st) }.get { KeychainError(.io, "cannot create \(path): \($0)") }
            case .failure(let failure):
                throw KeychainError(.io, "cannot create \(path): \(failure)")
            }
        }
        switch PrivateFile.Rule.privateFile.violation(st) {
        case .kind(let kind):
            throw KeychainError(.io, "\(path) is not a regular file (\(PrivateFile.kindName(kind))); locket refuses to use it next to a keychain")
        case .owner(let uid):
            throw KeychainError(.io, "\(path) belongs to another user (uid \(uid)); locket refuses to use it next to a keychain")
        case .mode(let mode):
            throw KeychainError(.io, "\(path) is open to other users (mode \(String(mode & 0o777, radix: 8))); locket refuses to use it next to a keychain")
        case nil:
            break
        }
        // A second name for one of the user's files (a hard link made by
        // someone else): SQLite would overwrite that file.
        guard st.st_nlink == 1 else {
            throw KeychainError(.io, "\(path) has \(st.st_nlink) names (hard links); locket refuses to use it next to a keychain")
        }
        return false
    }
}
