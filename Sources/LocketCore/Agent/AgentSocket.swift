import Glibc

/// The agent's listening Unix socket: mode 0600, by default alone in a new
/// 0700 directory that mkdtemp(3) makes, so no path anyone else planted is
/// ever used (mkdtemp fails rather than reuse a name, and nobody else can
/// enter the directory afterwards). Closing removes the socket, only if it
/// is still the one bound here, and the directory.
public final class AgentSocket {
    /// The socket's path, for SSH_AUTH_SOCK.
    public let path: String
    /// The private directory made for it; nil for a path given with `-a`.
    public let directory: String?
    /// The listening descriptor (non-blocking, close-on-exec).
    public let descriptor: Int32
    private let device: UInt64
    private let inode: UInt64
    private var closed = false

    /// The longest path a Unix socket address holds (sun_path less its NUL).
    public static let maximumPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// A socket named `agent.PID` in a new private directory
    /// `locket-agent.XXXXXX` under `parent`.
    public static func makePrivate(under parent: String) throws -> AgentSocket {
        var template = Array("\(parent)/locket-agent.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard let made else {
            throw KeychainError(.io, "cannot make a private directory in \(parent) for the agent socket: \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: made)
        do {
            return try AgentSocket(path: "\(directory)/agent.\(getpid())", directory: directory)
        } catch {
            rmdir(directory)
            throw error
        }
    }

    /// A socket at exactly `path`, which must not exist: nothing is removed to
    /// make room. A relative path is made absolute first: it goes into
    /// SSH_AUTH_SOCK, and a daemon changes its directory.
    public convenience init(path: String) throws {
        var absolute = path
        if !path.hasPrefix("/") {
            guard let cwd = getcwd(nil, 0) else { throw KeychainError(.io, "cannot tell the current directory: \(String(cString: strerror(errno)))") }
            absolute = String(cString: cwd) + "/" + path
            free(cwd)
        }
        try self.init(path: absolute, directory: nil)
    }

    private init(path: String, directory: String?) throws {
        guard path.utf8.count <= Self.maximumPathLength else {
            throw KeychainError(.param, "the socket path \(path) is longer than the \(Self.maximumPathLength) bytes a Unix socket allows")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw KeychainError(.io, "cannot make a Unix socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8)
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        // bind(2) gives the socket the umask's mode. In a directory of our own
        // nobody else can reach it, and chmod follows; at a path given with -a
        // it must be 0600 from the start, so the umask is narrowed around bind
        // (process-wide, but nothing else runs in the agent then).
        let previous = directory == nil ? umask(0o177) : nil
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        let bindError = errno
        if let previous { umask(previous) }
        if bound == 0 && directory != nil { chmod(path, 0o600) }
        guard bound == 0 else {
            Glibc.close(fd)
            throw KeychainError(.io, "cannot bind the agent socket \(path): \(String(cString: strerror(bindError)))")
        }
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK, st.st_uid == geteuid(), st.st_mode & 0o077 == 0 else {
            // Ours but not private (an -a path under a mount that ignores modes): take it away again.
            if st.st_mode & S_IFMT == S_IFSOCK && st.st_uid == geteuid() { unlink(path) }
            Glibc.close(fd)
            throw KeychainError(.io, "the agent socket \(path) is not the private socket just bound")
        }
        guard listen(fd, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(path)
            Glibc.close(fd)
            throw KeychainError(.io, "cannot listen on the agent socket \(path): \(reason)")
        }
        self.path = path
        self.directory = directory
        self.descriptor = fd
        self.device = UInt64(st.st_dev)
        self.inode = UInt64(st.st_ino)
    }

    deinit { close() }

    /// Closes the descriptor in this process and removes nothing: for the
    /// parent of a daemon, which goes on serving the socket.
    public func leaveToChild() {
        guard !closed else { return }
        closed = true
        Glibc.close(descriptor)
    }

    /// Stops listening and removes the socket (if it is still this one) and its private directory.
    public func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(descriptor)
        var st = stat()
        if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK, UInt64(st.st_dev) == device, UInt64(st.st_ino) == inode {
            unlink(path)
        }
        if let directory { rmdir(directory) }
    }
}
