import Glibc

/// A file locket reads or keeps only if nobody else could have made or
/// changed it: a session's keys, the generation mirror, the offline cache, a
/// password or key file, a lock beside a keychain, an entitlements file.
///
/// It is opened without following a symbolic link (unless asked), without
/// waiting on a FIFO (O_NONBLOCK: the kind is judged after open, and a FIFO
/// is refused at once), close-on-exec, and judged by its descriptor (fstat),
/// so that what is checked is what is read. Before this type each reader
/// wrote its own `st_uid == geteuid()` check, and some read with raw calls
/// beside the system-call wrapper.
///
/// Noncopyable: the descriptor is closed exactly once, by `close()`, at the
/// end of `closeAfter` (shaped like swift-system's `FileDescriptor.closeAfter`),
/// or when the value is dropped, on every path, thrown or not.
public struct PrivateFile: ~Copyable {
    /// The open descriptor; valid while this value lives.
    public let descriptor: Int32
    /// What fstat(2) said of the file when it was opened and judged.
    public let status: stat

    /// The file's size when it was opened.
    public var size: Int { Int(status.st_size) }

    /// What the file must be: its kind, who may own it, and which permission
    /// bits only its owner may hold.
    public struct Rule: Sendable, Equatable {
        /// The file type (`S_IFREG`, `S_IFDIR`, `S_IFSOCK`).
        public var kind: mode_t
        /// Whether root may own it as well as this user (a file root hands
        /// out: entitlements, a password file from systemd).
        public var rootMayOwn: Bool
        /// The permission bits nobody but the owner may hold: 0o077 (nobody
        /// else reads or writes it), 0o022 (nobody else writes it), 0 (the
        /// mode is not judged: a lock file, or a caller that judges it
        /// itself, by its ACL).
        public var ownerOnly: mode_t

        public init(kind: mode_t, rootMayOwn: Bool = false, ownerOnly: mode_t) {
            self.kind = kind
            self.rootMayOwn = rootMayOwn
            self.ownerOnly = ownerOnly
        }

        /// This user's regular file that nobody else may read or write (keys, caches, records).
        public static let privateFile = Rule(kind: S_IFREG, ownerOnly: 0o077)
        /// This user's regular file that nobody else may write (others may read it).
        public static let unwritableFile = Rule(kind: S_IFREG, ownerOnly: 0o022)
        /// This user's regular file, whatever its mode (a lock file only its flock matters in).
        public static let ownFile = Rule(kind: S_IFREG, ownerOnly: 0)
        /// This user's directory that nobody else may enter (mode 700).
        public static let privateDirectory = Rule(kind: S_IFDIR, ownerOnly: 0o077)
        /// This user's directory, whatever its mode.
        public static let ownDirectory = Rule(kind: S_IFDIR, ownerOnly: 0)
        /// This user's socket that nobody else may connect to.
        public static let privateSocket = Rule(kind: S_IFSOCK, ownerOnly: 0o077)
        /// This user's socket, whatever its mode.
        public static let ownSocket = Rule(kind: S_IFSOCK, ownerOnly: 0)

        /// How `status` breaks the rule, the first of kind, owner, mode; nil when it keeps it.
        public func violation(_ status: stat) -> Violation? {
            if status.st_mode & S_IFMT != kind { return .kind(status.st_mode & S_IFMT) }
            if !PrivateFile.isOwn(status, orRoot: rootMayOwn) { return .owner(status.st_uid) }
            if status.st_mode & ownerOnly != 0 { return .mode(status.st_mode & 0o7777) }
            return nil
        }

        /// Whether what is at `path` (the link itself, unless `followingLinks`) keeps the rule.
        public func isKept(atPath path: String, followingLinks: Bool = false) -> Bool {
            var status = stat()
            let found = followingLinks ? stat(path, &status) : lstat(path, &status)
            return found == 0 && violation(status) == nil
        }
    }

    /// How a file breaks a `Rule`.
    public enum Violation: Error, Equatable, Sendable {
        /// It is not of the kind asked for; its S_IFMT bits (0 when unknown).
        case kind(mode_t)
        /// Another user owns it; their uid.
        case owner(uid_t)
        /// Others hold bits only its owner may; its whole mode (& 0o7777).
        case mode(mode_t)
    }

    /// Why a file was not opened.
    public enum Failure: Error, Equatable, Sendable {
        /// Nothing is there (ENOENT).
        case missing
        /// A symbolic link is there and links are not followed (ELOOP).
        case symbolicLink
        /// open(2) or fstat(2) failed otherwise.
        case unreadable(Errno)
        /// It is there but breaks the rule (the descriptor is closed already).
        case refused(Violation)
    }

    /// Opens `path` (relative to the open directory `directory`, else to the
    /// working directory) and judges it by `rule`. `access` is O_RDONLY,
    /// O_WRONLY or O_RDWR, with O_APPEND if wanted; with `creating`, a
    /// missing file is made with that mode (O_CREAT; an existing one is
    /// opened and judged as any other).
    public init(_ path: String, in directory: Int32 = AT_FDCWD, access: Int32 = O_RDONLY, creating mode: mode_t? = nil,
                followingLinks: Bool = false, rule: Rule) throws(Failure) {
        switch Self.open(path, in: directory, access: access, creating: mode, followingLinks: followingLinks, rule: rule) {
        case .success(let (fd, status)):
            descriptor = fd
            self.status = status
        case .failure(let failure):
            throw failure
        }
    }

    /// `init(_:in:access:creating:followingLinks:rule:)`, its failure made
    /// the caller's error by `wrap` (a message naming the file and what it holds).
    public init<E: Error>(_ path: String, in directory: Int32 = AT_FDCWD, access: Int32 = O_RDONLY, creating mode: mode_t? = nil,
                          followingLinks: Bool = false, rule: Rule, or wrap: (Failure) -> E) throws(E) {
        switch Self.open(path, in: directory, access: access, creating: mode, followingLinks: followingLinks, rule: rule) {
        case .success(let (fd, status)):
            descriptor = fd
            self.status = status
        case .failure(let failure):
            throw wrap(failure)
        }
    }

    /// The descriptor and status of a file that keeps `rule`; on a refusal
    /// the descriptor is closed before this returns.
    private static func open(_ path: String, in directory: Int32, access: Int32, creating mode: mode_t?, followingLinks: Bool,
                             rule: Rule) -> Result<(Int32, stat), Failure> {
        var flags = access | O_CLOEXEC | O_NOCTTY | O_NONBLOCK
        if !followingLinks { flags |= O_NOFOLLOW }
        if rule.kind == S_IFDIR { flags |= O_DIRECTORY }
        if mode != nil { flags |= O_CREAT }
        let fd: Int32
        switch valueOrErrno("openat", { openat(directory, path, flags, mode ?? 0) }) {
        case .success(let opened): fd = opened
        case .failure(let failure) where failure.code == ENOENT: return .failure(.missing)
        case .failure(let failure) where failure.code == ELOOP && !followingLinks: return .failure(.symbolicLink)
        // O_DIRECTORY on something else: judged as a kind, like any other.
        case .failure(let failure) where failure.code == ENOTDIR && rule.kind == S_IFDIR:
            var status = stat()
            guard fstatat(directory, path, &status, followingLinks ? 0 : AT_SYMLINK_NOFOLLOW) == 0 else { return .failure(.refused(.kind(0))) }
            return .failure(status.st_mode & S_IFMT == S_IFLNK ? .symbolicLink : .refused(.kind(status.st_mode & S_IFMT)))
        case .failure(let failure): return .failure(.unreadable(failure))
        }
        var status = stat()
        if let failure = nothingOrErrno("fstat", { fstat(fd, &status) }).error {
            Glibc.close(fd)
            return .failure(.unreadable(failure))
        }
        if let violation = rule.violation(status) {
            Glibc.close(fd)
            return .failure(.refused(violation))
        }
        return .success((fd, status))
    }

    deinit { Glibc.close(descriptor) }

    /// Closes the file now; the errno of a failed close (a write-back error).
    @discardableResult
    public consuming func close() -> Result<Void, Errno> {
        let result = nothingOrErrno("close", retryOnInterrupt: false) { Glibc.close(descriptor) }
        discard self
        return result
    }

    /// Runs `body` with the file, then closes it, also when `body` throws.
    public consuming func closeAfter<R, E: Error>(_ body: (borrowing PrivateFile) throws(E) -> R) throws(E) -> R {
        try body(self)
    }

    /// Fills `buffer` from the current offset, again after a short read or
    /// EINTR: the count read (less at the end of the file), or the errno.
    public borrowing func read(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        readFully(descriptor, into: buffer)
    }

    /// Fills `buffer` from `offset` (pread(2), the file offset untouched),
    /// again after a short read or EINTR: the count read, or the errno.
    public borrowing func read(into buffer: UnsafeMutableRawBufferPointer, at offset: off_t) -> Result<Int, Errno> {
        var done = 0
        while done < buffer.count {
            switch valueOrErrno("pread", { pread(descriptor, buffer.baseAddress! + done, buffer.count - done, offset + off_t(done)) }) {
            case .success(0): return .success(done)
            case .success(let n): done += n
            case .failure(let failure): return .failure(failure)
            }
        }
        return .success(done)
    }

    /// Whether `buffer` was filled whole from the start of the file.
    public borrowing func readWhole(into buffer: UnsafeMutableRawBufferPointer) -> Bool {
        (try? read(into: buffer, at: 0).get()) == buffer.count
    }

    /// Writes all of `bytes` at `offset` (pwrite(2)), again after a short write or EINTR.
    public borrowing func write(_ bytes: UnsafeRawBufferPointer, at offset: off_t) -> Result<Void, Errno> {
        var done = 0
        while done < bytes.count {
            switch valueOrErrno("pwrite", { pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, offset + off_t(done)) }) {
            case .success(let n): done += n
            case .failure(let failure): return .failure(failure)
            }
        }
        return .success(())
    }

    /// Writes all of `bytes` at the current offset (the end, with O_APPEND).
    public borrowing func write(_ bytes: UnsafeRawBufferPointer) -> Result<Void, Errno> {
        writeAll(descriptor, bytes)
    }
}

extension PrivateFile.Violation {
    /// The usual words for it, after the file's name: "is a FIFO, not a
    /// regular file", "belongs to another user (uid 1001)", "is open to other
    /// users (mode 644)". Callers with words of their own (a hint, the
    /// reason it matters there) switch over the cases instead.
    public func text(expected kind: mode_t) -> String {
        switch self {
        case .kind(let found):
            "is \(PrivateFile.kindName(found)), not \(PrivateFile.kindName(kind))"
        case .owner(let uid):
            "belongs to another user (uid \(uid))"
        case .mode(let mode):
            "is open to other users (mode \(String(mode & 0o777, radix: 8)))"
        }
    }
}

extension PrivateFile {
    /// Whether this user (the effective uid), or root when `orRoot`, owns
    /// the file `status` describes: the one owner check.
    public static func isOwn(_ status: stat, orRoot: Bool = false) -> Bool {
        status.st_uid == geteuid() || (orRoot && status.st_uid == 0)
    }

    /// What a file type is called in messages.
    public static func kindName(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFLNK: "a symbolic link"
        case S_IFIFO: "a FIFO"
        case S_IFDIR: "a directory"
        case S_IFSOCK: "a socket"
        case S_IFCHR, S_IFBLK: "a device"
        case S_IFREG: "a regular file"
        default: "an unknown kind of file"
        }
    }
}
