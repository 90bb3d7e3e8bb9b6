/// Something a client was refused, or a connection the server dropped. The
/// engine never prints: the server hands these to its owner, which words
/// them (the command line writes one line on stderr for each).
public enum AgentEvent: Equatable, Sendable {
    /// A signature was refused (the key is locked, not visible, or can't make
    /// the signature asked for); the client got SSH_AGENT_FAILURE.
    case signRefused(KeychainError)
    /// Listing the identities failed; the client got SSH_AGENT_FAILURE.
    case identitiesRefused(KeychainError)
    /// `ssh-add KEY` (or a smartcard key) was refused: keys enter the keychain another way.
    case addRefused
    /// `ssh-add -d`/`-D` was refused: keys leave the keychain another way.
    case removeRefused
    /// `ssh-add -x`/`-X` was refused: the keychain's own lock is what locks the keys.
    case lockRefused
    /// A message number the agent does not know; the client got SSH_AGENT_FAILURE.
    case unsupported(UInt8)
    /// A request that could not be read; the client got SSH_AGENT_FAILURE.
    case malformed(KeychainError)
    /// A connection closed by the server: a message over the size limit, a
    /// client that stalled mid-message or stopped reading, or one too many.
    case dropped(KeychainError)
    /// A connection from another user, closed before anything was read.
    case peerRefused(uid: UInt32)
}
