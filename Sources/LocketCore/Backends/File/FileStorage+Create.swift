import Glibc
import LocketSupport

/// `init` of a keychain file: built in a private directory beside its path and linked into place.
extension FileStorage {
    /// Where a new keychain file goes.
    final class New: KeychainPlace {
        let path: String
        let format: Int64
        /// Whether the directory is shared (sticky, others may write it): SQLite's companions are claimed first.
        private var shared = false

        init(path: String, format: Int64) {
            self.path = path
            self.format = format
        }

        var address: String { path }
        var medium: String { "file" }
        var policy: StoragePolicy {
            var policy = FileStorage.policy
            policy.format = format
            return policy
        }
        var headerLayout: Header.Layout { .tables }

        func checkVacant() throws {
            if FileIO.exists(path) { throw KeychainError(.duplicateKeychain, "a keychain already exists at \(path)") }
        }

        func prepare(environment: Environment) throws {
            try FileIO.makeDirectories(FileIO.directory(of: path))
            // Judged as `open` will judge it: a keychain made where it cannot be opened helps no one.
            shared = try FileIO.checkPrivateFile(path, what: "keychain")
        }

        func make(header: [(String, [UInt8])], keybag: Keybag, environment: Environment) throws -> any KeychainStorage {
            try New.refuseLeftoverJournals(of: path)
            // Claim the names SQLite will use beside the keychain before it exists.
            let claimed = shared ? try Database.claimCompanions(of: path) : []
            do {
                // Build the file in a private directory next to it and link it into
                // place, so a crash never leaves a half-made keychain at the real path,
                // and nobody else can plant or read a file SQLite uses meanwhile (a
                // predictable name in /tmp could be made first by another user).
                New.removeAbandonedInits(of: path)
                do {
                    let workspace = try New.makeWorkspace(for: path)
                    defer { New.removeWorkspace(workspace) }
                    let temporary = workspace + "/keychain"
                    // SQLite would make it with its own 0644, less what the
                    // umask takes away; its journals take the file's mode.
                    try FileIO.createEmpty(temporary, mode: 0o600)
                    do {
                        let db = try Database(path: temporary, create: true)
                        try db.execute("PRAGMA journal_mode=WAL")
                        try db.transaction(write: true) {
                            for sql in Schema.statements(format: format) { try db.execute(sql) }
                            try MetaStore.write(db, named: header)
                            try MetaStore.writeKeybag(db, keybag)
                        }
                    }
                    if let failure = nothingOrErrno("link", { link(temporary, path) }).error {
                        if failure.code == EEXIST { throw KeychainError(.duplicateKeychain, "a keychain already exists at \(path)") }
                        throw KeychainError(.io, "cannot create \(path): \(failure)")
                    }
                }
                // With the workspace gone, one sync of the directory makes the
                // new name (and that removal) survive a power loss: init says
                // yes only after it.
                try FileIO.syncDirectory(FileIO.directory(of: path))
            } catch {
                for file in claimed { unlink(file) }
                throw error
            }
            return FileStorage(database: Database(unopened: path), format: format)
        }

        /// A non-empty `-wal` or `-journal` where no keychain is holds the frames
        /// of a keychain that was deleted: SQLite would replay them into the new
        /// one when it is first opened. They are refused, named, not removed
        /// (they may be all that is left of the old keychain's last writes).
        fileprivate static func refuseLeftoverJournals(of path: String) throws {
            for suffix in ["-wal", "-journal"] {
                var st = stat()
                // Another user's file there is refused by the companion claim, by owner.
                guard lstat(path + suffix, &st) == 0, PrivateFile.isOwn(st) else { continue }
                if (st.st_mode & S_IFMT) == S_IFREG && st.st_size == 0 { continue }
                throw KeychainError(.io, "\(path + suffix) is left from a keychain that is gone, and SQLite would replay it into a new one; move it away first")
            }
        }

        /// The private directory `init` builds a keychain in: `PATH.init.PID.XXXXXX`, mode 700.
        fileprivate static func makeWorkspace(for path: String) throws -> String {
            var template = Array("\(path).init.\(getpid()).XXXXXX".utf8CString)
            let made = try template.withUnsafeMutableBufferPointer { buffer in
                try pointerOrErrno("mkdtemp") { mkdtemp(buffer.baseAddress!) }.get { KeychainError(.io, "cannot create a directory next to \(path): \($0)") }
            }
            return String(cString: made)
        }

        fileprivate static func removeWorkspace(_ workspace: String) {
            for suffix in [""] + Database.companionSuffixes { unlink(workspace + "/keychain" + suffix) }
            rmdir(workspace)
        }

        /// Removes what a killed `init` left when that process is gone: its
        /// directory `PATH.init.PID.XXXXXX`, or the files `PATH.init.PID[-wal|-shm]`
        /// of earlier versions. Only the user's own; others' names in a shared
        /// directory are left alone.
        fileprivate static func removeAbandonedInits(of path: String) {
            let directory = FileIO.directory(of: path)
            let prefix = String(path.split(separator: "/").last ?? "") + ".init."
            guard let dir = opendir(directory) else { return }
            var doomed: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                guard name.hasPrefix(prefix) else { continue }
                let pidText = name.dropFirst(prefix.count).prefix { $0.isNumber }
                if let pid = Int32(pidText), pid != getpid(), nothingOrErrno("kill", { kill(pid, 0) }).error?.code == ESRCH { doomed.append(name) }
            }
            closedir(dir)
            for name in doomed {
                let full = directory + "/" + name
                var st = stat()
                guard lstat(full, &st) == 0, PrivateFile.isOwn(st) else { continue }
                if st.st_mode & S_IFMT == S_IFDIR { removeWorkspace(full) } else { unlink(full) }
            }
        }
    }
}
