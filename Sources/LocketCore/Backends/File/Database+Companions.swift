import Glibc
import LocketSupport

/// The files SQLite keeps beside a keychain, and their claiming in a shared
/// directory before SQLite opens them.
extension Database {
    /// What SQLite may open beside a keychain: the WAL, and a rollback journal
    /// (written only while a new file is switched to WAL, but looked for at
    /// every open: a non-empty one would be played back into the keychain).
    /// The one list of them. (No `-shm`: exclusive locking keeps the WAL's
    /// index in memory; `staleSharedMemorySuffix` is what older releases left.)
    static let companionSuffixes = ["-wal", "-journal"]

    /// The shared-memory index releases before exclusive locking kept beside
    /// a keychain. Never opened now; removed by the first write (under the
    /// exclusive lock, so no process of an older release can be using it).
    static let staleSharedMemorySuffix = "-shm"

    /// Makes every companion of the keychain at `path`, in a shared sticky
    /// directory, the user's own private file before SQLite opens it (SPEC §7):
    /// the unix VFS opens them itself, with O_CREAT, so no check inside the
    /// VFS could see it. Returns the files it created.
    @discardableResult
    static func claimCompanions(of path: String) throws -> [String] {
        var created: [String] = []
        do {
            for suffix in companionSuffixes {
                if try FileIO.claimInSharedDirectory(path + suffix) { created.append(path + suffix) }
            }
        } catch {
            for file in created { unlink(file) }
            throw error
        }
        if !created.isEmpty {
            // The VFS skips SQLite's directory fsync for a WAL that already
            // exists: make the new names durable here, once.
            let directory = open(FileIO.directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if directory >= 0 {
                fsync(directory)
                Glibc.close(directory)
            }
        }
        return created
    }
}
