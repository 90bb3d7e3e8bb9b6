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
    public var path: String { listening.path }
    /// The listening descriptor (non-blocking, close-on-exec).
    public var descriptor: Int32 { listening.descriptor }
    let listening: ListeningSocket
    /// The directory, when this socket made it (it goes when the socket does).
    private let madeDirectory: String?
    private var closed = false

    /// The longest path a Unix socket address holds (sun_path less its NUL).
    public static let maximumPathLength = ListeningSocket.maximumPathLength

    /// Binds and listens at `path` (made absolute from the current directory).
    public init(path given: String) throws {
        var path = try ListeningSocket.absolute(given)
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        try ListeningSocket.checkLength(path)
        let made = try Self.prepareDirectory(FileIO.directory(of: path))
        do {
            try Self.clearStaleSocket(path)
            // systemd starts every unit of a boot at once: room for all of them.
            listening = try ListeningSocket(path: path, what: "the credential socket", inPrivateDirectory: false, backlog: SOMAXCONN)
            madeDirectory = made
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
        listening.close(removing: true)
        if let madeDirectory { rmdir(madeDirectory) }
    }

    /// Makes `directory` (0700) when it is missing and checks it; the path
    /// made, or nil when it was there.
    private static func prepareDirectory(_ directory: String) throws -> String? {
        var made: String?
        var st = stat()
        if let failure = nothingOrErrno("lstat", { lstat(directory, &st) }).error {
            guard failure.code == ENOENT else { throw KeychainError(.io, "cannot examine \(directory): \(failure)") }
            try nothingOrErrno("mkdir") { mkdir(directory, 0o700) }.get { KeychainError(.io, "cannot create \(directory): \($0)") }
            made = directory
            try nothingOrErrno("lstat") { lstat(directory, &st) }.get { KeychainError(.io, "cannot examine \(directory): \($0)") }
        }
        let refusal: String? =
            switch PrivateFile.Rule(kind: S_IFDIR, rootMayOwn: true, ownerOnly: 0o022).violation(st) {
            case .kind(let kind): "\(directory) is not a directory (\(PrivateFile.kindName(kind)))"
            case .owner(let uid): "\(directory) belongs to another user (uid \(uid))"
            case .mode(let mode): "\(directory) is writable by other users (mode \(String(mode, radix: 8))); run chmod go-w on it"
            // Whoever controls a directory above could put another socket where systemd looks.
            case nil: TrustedPath.unsafeAncestor(of: directory).map { "\($0) could be changed by another user" }
            }
        if let refusal {
            if let made { rmdir(made) }
            throw KeychainError(.io, "\(refusal); locket keeps the credential socket only in a directory that only you (or root) control")
        }
        return made
    }

    /// Removes a socket of this user's at `path` that nobody listens on (what
    /// a killed credential socket leaves); refuses anything else there.
    private static func clearStaleSocket(_ path: String) throws {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        guard PrivateFile.Rule.ownSocket.violation(st) == nil else {
            throw KeychainError(.io, "\(path) exists and is not a socket of yours (\(PrivateFile.kindName(st.st_mode))); locket does not replace it")
        }
        let probe = try valueOrErrno("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
            .get { KeychainError(.io, "cannot make a Unix socket: \($0)") }
        defer { Glibc.close(probe) }
        var address = ListeningSocket.address(path)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                nothingOrErrno("connect") { connect(probe, address, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        }
        switch connected {
        case .success: throw KeychainError(.io, "another credential socket is listening at \(path)")
        case .failure(let failure) where failure.code != ECONNREFUSED:
            throw KeychainError(.io, "cannot tell whether \(path) is in use: \(failure)")
        case .failure: break
        }
        try nothingOrErrno("unlink") { unlink(path) }.get { KeychainError(.io, "cannot remove the stale socket \(path): \($0)") }
    }
}
