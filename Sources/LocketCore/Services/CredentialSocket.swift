import Glibc
import LocketSupport

/// The credential socket's listening Unix socket (systemd's `LoadCredential=
/// ID:/PATH`, systemd.exec(5)): mode 0600, in a directory only its owner
/// controls, because systemd reads whatever answers at PATH and hands it to
/// the unit as its secret. The directory must belong to this user or root
/// and be writable by nobody else, and so must every directory above it
/// (sticky ones excepted, whose entries nobody else can rename); it is made
/// (mode 0700) when missing. A socket left at PATH by a credential socket
/// that was killed is replaced; one that still answers is not.
public final class CredentialSocket {
    /// The socket's absolute path.
    public let path: String
    /// The listening descriptor (non-blocking, close-on-exec).
    public let descriptor: Int32
    private let device: UInt64
    private let inode: UInt64
    /// The directory, when this socket made it (it goes when the socket does).
    private let madeDirectory: String?
    private var closed = false

    /// The longest path a Unix socket address holds (sun_path less its NUL).
    public static let maximumPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Binds and listens at `path` (made absolute from the current directory).
    public init(path given: String) throws {
        var path = given
        if !path.hasPrefix("/") {
            guard let cwd = getcwd(nil, 0) else { throw KeychainError(.io, "cannot tell the current directory: \(errnoText())") }
            path = String(cString: cwd) + "/" + path
            free(cwd)
        }
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        guard path.utf8.count <= Self.maximumPathLength else {
            throw KeychainError(.param, "the socket path \(path) is longer than the \(Self.maximumPathLength) bytes a Unix socket allows")
        }
        let directory = FileIO.directory(of: path)
        let made = try Self.prepareDirectory(directory)
        do {
            try Self.clearStaleSocket(path)
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { throw KeychainError(.io, "cannot make a Unix socket: \(errnoText())") }
            var address = Self.address(path)
            // Mode 0600 from the start: the umask is narrowed around bind
            // (process-wide, but nothing else runs yet).
            let previous = umask(0o177)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            let bindError = errno
            umask(previous)
            guard bound == 0 else {
                Glibc.close(fd)
                throw KeychainError(.io, "cannot bind the credential socket \(path): \(String(cString: strerror(bindError)))")
            }
            var st = stat()
            guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK, st.st_uid == geteuid(), st.st_mode & 0o077 == 0 else {
                if st.st_mode & S_IFMT == S_IFSOCK && st.st_uid == geteuid() { unlink(path) }
                Glibc.close(fd)
                throw KeychainError(.io, "the credential socket \(path) is not the private socket just bound")
            }
            // systemd starts every unit of a boot at once: room for all of them.
            guard listen(fd, SOMAXCONN) == 0 else {
                let reason = errnoText()
                unlink(path)
                Glibc.close(fd)
                throw KeychainError(.io, "cannot listen on the credential socket \(path): \(reason)")
            }
            self.path = path
            madeDirectory = made
            descriptor = fd
            device = UInt64(st.st_dev)
            inode = UInt64(st.st_ino)
        } catch {
            if let made { rmdir(made) }
            throw error
        }
    }

    deinit { close() }

    /// Stops listening and removes the socket (if it is still this one), and
    /// its directory if this socket made it.
    public func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(descriptor)
        var st = stat()
        if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK, UInt64(st.st_dev) == device, UInt64(st.st_ino) == inode {
            unlink(path)
        }
        if let madeDirectory { rmdir(madeDirectory) }
    }

    static func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8)
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    /// Makes `directory` (0700) when it is missing and checks it; the path
    /// made, or nil when it was there.
    private static func prepareDirectory(_ directory: String) throws -> String? {
        var made: String?
        var st = stat()
        if lstat(directory, &st) != 0 {
            guard errno == ENOENT else { throw KeychainError(.io, "cannot examine \(directory): \(errnoText())") }
            guard mkdir(directory, 0o700) == 0 else { throw KeychainError(.io, "cannot create \(directory): \(errnoText())") }
            made = directory
            guard lstat(directory, &st) == 0 else { throw KeychainError(.io, "cannot examine \(directory): \(errnoText())") }
        }
        let refusal: String? =
            if st.st_mode & S_IFMT != S_IFDIR { "\(directory) is not a directory (\(FileIO.kind(st.st_mode)))" }
            else if st.st_uid != geteuid() && st.st_uid != 0 { "\(directory) belongs to another user (uid \(st.st_uid))" }
            else if st.st_mode & 0o022 != 0 {
                "\(directory) is writable by other users (mode \(String(st.st_mode & 0o7777, radix: 8))); run chmod go-w on it"
            } else { unsafeAncestor(of: directory).map { "\($0) could be changed by another user" } }
        if let refusal {
            if let made { rmdir(made) }
            throw KeychainError(.io, "\(refusal); locket keeps the credential socket only in a directory that only you (or root) control")
        }
        return made
    }

    /// The first directory above `path` (as written, then as resolved) that
    /// another user owns, or that others may write without the sticky bit:
    /// whoever controls it could put another socket where systemd looks.
    private static func unsafeAncestor(of path: String) -> String? {
        var candidates = [path]
        if let resolved = realpath(path, nil) {
            candidates.append(String(cString: resolved))
            free(resolved)
        }
        for candidate in candidates {
            var prefix = ""
            for component in candidate.split(separator: "/").dropLast() {
                prefix += "/" + component
                var st = stat()
                guard lstat(prefix, &st) == 0, st.st_uid == 0 || st.st_uid == geteuid() else { return prefix }
                if st.st_mode & S_IFMT == S_IFDIR, st.st_mode & 0o022 != 0, st.st_mode & S_ISVTX == 0 { return prefix }
            }
        }
        return nil
    }

    /// Removes a socket of this user's at `path` that nobody listens on (what
    /// a killed credential socket leaves); refuses anything else there.
    private static func clearStaleSocket(_ path: String) throws {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        guard st.st_mode & S_IFMT == S_IFSOCK, st.st_uid == geteuid() else {
            throw KeychainError(.io, "\(path) exists and is not a socket of yours (\(FileIO.kind(st.st_mode))); locket does not replace it")
        }
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { throw KeychainError(.io, "cannot make a Unix socket: \(errnoText())") }
        defer { Glibc.close(probe) }
        var address = address(path)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if connected == 0 {
            throw KeychainError(.io, "another credential socket is listening at \(path)")
        }
        guard errno == ECONNREFUSED else { throw KeychainError(.io, "cannot tell whether \(path) is in use: \(errnoText())") }
        guard unlink(path) == 0 else { throw KeychainError(.io, "cannot remove the stale socket \(path): \(errnoText())") }
    }
}
