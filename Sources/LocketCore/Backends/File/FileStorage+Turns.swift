import Glibc
import LocketSupport

/// Password attempts on a keychain file take turns on a lock file beside it,
/// `PATH-attempts` (empty, mode 0600, kept): flock(2), which the kernel
/// drops when the holder closes it or dies, so a killed `unlock` never locks
/// the keychain out. Not the keychain file itself: closing a second
/// descriptor of it would drop the POSIX locks SQLite holds on it in this
/// process. Not SQLite's lock either: the wait and the hash would hold
/// every reader off the file for up to half a minute. Only a password check
/// makes or opens it; a read-only command never does (SPEC §11).
extension FileStorage: PasswordTurns {
    /// What the lock file's name adds to the keychain's path.
    static let attemptsLockSuffix = "-attempts"

    func passwordTurn(busy: () -> Void) throws -> AnyObject {
        let path = database.path + Self.attemptsLockSuffix
        // In a sticky shared directory the name is made ours before it is
        // opened, as SQLite's companions are; elsewhere only we can make it.
        if try FileIO.checkPrivateFile(database.path, what: "keychain") {
            _ = try FileIO.claimInSharedDirectory(path)
        }
        let file = try PrivateFile(path, creating: 0o600, rule: .ownFile) { failure in
            switch failure {
            case .refused: KeychainError(.io, "\(path) is not a regular file of yours; locket refuses to use it next to a keychain")
            case .unreadable(let errno): KeychainError(.io, "cannot open \(path), where password attempts take turns: \(errno)")
            case .missing, .symbolicLink:
                KeychainError(.io, "cannot open \(path), where password attempts take turns: \(Errno(failure == .missing ? ENOENT : ELOOP))")
            }
        }
        let fd = file.descriptor
        let turn = FileTurn(file)
        if case .failure(let failure) = nothingOrErrno("flock", { flock(fd, LOCK_EX | LOCK_NB) }) {
            guard failure.code == EWOULDBLOCK else { throw KeychainError(.io, "cannot lock \(path): \(failure)") }
            busy()
            try nothingOrErrno("flock") { flock(fd, LOCK_EX) }.get { KeychainError(.io, "cannot lock \(path): \($0)") }
        }
        return turn
    }
}

/// A held turn: the lock goes with the descriptor, closed when the turn goes.
private final class FileTurn {
    private let file: PrivateFile
    init(_ file: consuming PrivateFile) { self.file = file }
}
