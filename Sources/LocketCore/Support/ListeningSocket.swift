import CLocketSystem
import Glibc
import LocketSupport

/// A listening Unix stream socket bound at a path, mode 0600 and this
/// user's, and the connections it accepts with who made them: what the
/// agent's socket and the credential socket share. Each adds where the path
/// may be (a directory of its own, one it checks) and who may connect.
struct ListeningSocket {
    /// The socket's absolute path.
    let path: String
    /// The listening descriptor (non-blocking, close-on-exec).
    let descriptor: Int32
    private let device: UInt64
    private let inode: UInt64

    /// The longest path a Unix socket address holds (sun_path less its NUL).
    static let maximumPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// `path` made absolute from the current directory: it goes into an
    /// environment variable or a unit file, and a daemon changes its directory.
    static func absolute(_ path: String) throws -> String {
        guard !path.hasPrefix("/") else { return path }
        let cwd = try pointerOrErrno("getcwd") { getcwd(nil, 0) }.get { KeychainError(.io, "cannot tell the current directory: \($0)") }
        defer { free(cwd) }
        return String(cString: cwd) + "/" + path
    }

    /// Refuses a path longer than a Unix socket address holds.
    static func checkLength(_ path: String) throws {
        guard path.utf8.count <= maximumPathLength else {
            throw KeychainError(.param, "the socket path \(path) is longer than the \(ByteSize.text(maximumPathLength)) a Unix socket allows")
        }
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

    /// Binds and listens at `path`, which must not exist. `what` names the
    /// socket in messages ("the agent socket"). bind(2) gives the socket the
    /// umask's mode: in a directory nobody else can enter (`inPrivateDirectory`)
    /// chmod follows; elsewhere it must be 0600 from the start, so the umask
    /// is narrowed around bind (process-wide, but nothing else runs yet).
    init(path: String, what: String, inPrivateDirectory: Bool, backlog: Int32) throws {
        try Self.checkLength(path)
        let fd = try valueOrErrno("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0) }
            .get { KeychainError(.io, "cannot make a Unix socket: \($0)") }
        var address = Self.address(path)
        let previous = inPrivateDirectory ? nil : umask(0o177)
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                nothingOrErrno("bind") { bind(fd, address, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        }
        if let previous { umask(previous) }
        if case .success = bound, inPrivateDirectory { chmod(path, 0o600) }
        if let failure = bound.error {
            Glibc.close(fd)
            throw KeychainError(.io, "cannot bind \(what) \(path): \(failure)")
        }
        var st = stat()
        guard lstat(path, &st) == 0, PrivateFile.Rule.privateSocket.violation(st) == nil else {
            // Ours but not private (under a mount that ignores modes): take it away again.
            if PrivateFile.Rule.ownSocket.violation(st) == nil { unlink(path) }
            Glibc.close(fd)
            throw KeychainError(.io, "\(what) \(path) is not the private socket just bound")
        }
        if let reason = nothingOrErrno("listen", { listen(fd, backlog) }).error {
            unlink(path)
            Glibc.close(fd)
            throw KeychainError(.io, "cannot listen on \(what) \(path): \(reason)")
        }
        self.path = path
        descriptor = fd
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
    }

    /// Closes the descriptor and, with `removing`, the socket if the path
    /// still names this one (not one another process bound there since).
    func close(removing: Bool) {
        Glibc.close(descriptor)
        guard removing else { return }
        var st = stat()
        if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK, UInt64(st.st_dev) == device, UInt64(st.st_ino) == inode {
            unlink(path)
        }
    }

    /// One connection taken from the queue.
    enum Accepted {
        /// None waiting (EAGAIN).
        case none
        /// accept(2) failed otherwise.
        case failed(Errno)
        /// A connection (non-blocking, close-on-exec) and its peer's uid (SO_PEERCRED).
        case connection(fd: Int32, uid: UInt32)
        /// A connection whose peer could not be told; already closed.
        case unidentified(Errno)
    }

    /// Accepts the next connection, again after EINTR or one that was
    /// aborted while it waited, and asks the kernel who made it.
    func accept() -> Accepted {
        while true {
            switch valueOrErrno("accept4", { locket_accept_nonblocking(descriptor) }) {
            case .failure(let failure) where failure.code == ECONNABORTED:
                continue
            case .failure(let failure):
                return failure.code == EAGAIN || failure.code == EWOULDBLOCK ? .none : .failed(failure)
            case .success(let fd):
                var uid: UInt32 = 0
                if let failure = nothingOrErrno("getsockopt", { locket_peer_uid(fd, &uid) }).error {
                    Glibc.close(fd)
                    return .unidentified(failure)
                }
                return .connection(fd: fd, uid: uid)
            }
        }
    }
}
