import Glibc
import LocketSupport

/// Deleting a keychain file (the Secret Service's Collection.Delete): the
/// file and everything kept beside it, named here beside the lists they
/// come from, so that a new companion cannot be forgotten by a caller.
extension Keychain {
    /// Removes the keychain file at `path`, then what SQLite and locket keep
    /// beside it: the WAL, a rollback journal, the `-shm` older releases
    /// left, and the password turn's `PATH-attempts`, which nothing else
    /// ever removes. The keychain first: if it cannot go, its WAL (perhaps
    /// its last writes) stays with it. A companion already gone is no error.
    public static func removeFile(at path: String) throws {
        try nothingOrErrno("unlink") { unlink(path) }.get { KeychainError(.io, "cannot remove \(path): \($0)") }
        for suffix in Database.companionSuffixes + [Database.staleSharedMemorySuffix, FileStorage.attemptsLockSuffix] {
            let companion = path + suffix
            if case .failure(let failure) = nothingOrErrno("unlink", { unlink(companion) }), failure.code != ENOENT {
                throw KeychainError(.io, "removed \(path), but not \(companion): \(failure)")
            }
        }
    }
}
