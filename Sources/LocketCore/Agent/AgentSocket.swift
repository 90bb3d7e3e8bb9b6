import Glibc
import LocketSupport

/// The agent's listening Unix socket: mode 0600, by default alone in a new
/// 0700 directory that mkdtemp(3) makes, so no path anyone else planted is
/// ever used (mkdtemp fails rather than reuse a name, and nobody else can
/// enter the directory afterwards). Closing removes the socket, only if it
/// is still the one bound here, and the directory.
public final class AgentSocket {
    /// The socket's path, for SSH_AUTH_SOCK.
    public var path: String { listening.path }
    /// The private directory made for it; nil for a path given with `-a`.
    public let directory: String?
    /// The listening descriptor (non-blocking, close-on-exec).
    public var descriptor: Int32 { listening.descriptor }
    let listening: ListeningSocket
    private var closed = false

    /// The longest path a Unix socket address holds (sun_path less its NUL).
    public static let maximumPathLength = ListeningSocket.maximumPathLength

    /// A socket named `agent.PID` in a new private directory
    /// `locket-agent.XXXXXX` under `parent`.
    public static func makePrivate(under parent: String) throws -> AgentSocket {
        var template = Array("\(parent)/locket-agent.XXXXXX".utf8CString)
        let made = try template.withUnsafeMutableBufferPointer { buffer in
            try pointerOrErrno("mkdtemp") { mkdtemp(buffer.baseAddress!) }
                .get { KeychainError(.io, "cannot make a private directory in \(parent) for the agent socket: \($0)") }
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
        try self.init(path: try ListeningSocket.absolute(path), directory: nil)
    }

    private init(path: String, directory: String?) throws {
        // In a directory of our own nobody else can reach the socket before chmod.
        listening = try ListeningSocket(path: path, what: "the agent socket", inPrivateDirectory: directory != nil, backlog: 64)
        self.directory = directory
    }

    deinit { close() }

    /// Closes the descriptor in this process and removes nothing: for the
    /// parent of a daemon, which goes on serving the socket.
    public func leaveToChild() {
        guard !closed else { return }
        closed = true
        listening.close(removing: false)
    }

    /// Stops listening and removes the socket (if it is still this one) and its private directory.
    public func close() {
        guard !closed else { return }
        closed = true
        listening.close(removing: true)
        if let directory { rmdir(directory) }
    }
}
