import CLocketSystem
import Glibc
import LocketSupport

/// Where unlocked keys wait between commands: the kernel user keyring when the
/// kernel allows it, else a private directory on tmpfs. Neither survives a
/// reboot, which is what makes `after-first-unlock` mean what it says.
public struct SessionStore: Sendable {
    /// The two places a session can live.
    public enum Backend: String, Sendable {
        case keyring
        case directory = "dir"
    }

    /// nil: keyring first, directory when the keyring is refused.
    let forced: Backend?
    let directory: String
    /// Sessions are keyed by the keychain's identity, so two keychains never share keys.
    let keychainID: String
    /// The clock a session's last use and expiry are read on (`Environment.time`).
    let time: TimeSource

    package init(environment: Environment, keychainID: [UInt8]) throws {
        forced = try environment.sessionBackend()
        directory = try environment.sessionDirectory(uid: geteuid())
        self.keychainID = Hex.encode(keychainID)
        time = environment.time
    }

    static let magic: [UInt8] = Array("LKS1".utf8)
    /// The size of a pooled guarded slot (`SecureBytes`): most records fit it.
    static let typicalRecordSize = 1024

    /// The session file's name in the directory, and its path for messages.
    func name(_ slot: String) -> String { "\(keychainID).\(slot)" }
    private func file(_ slot: String) -> String { "\(directory)/\(name(slot))" }

    // MARK: - Saving

    /// Stores `keys` for `tier`, expiring after `timeout` seconds of inactivity (0: never).
    @discardableResult
    func save(_ tier: ProtectionClass.Tier, keys: SessionKeys, timeout: UInt32) throws -> Backend {
        try save(tier.rawValue, keys: keys, timeout: timeout)
    }

    /// Stores `keys` in `slot` for `seconds` from now, however often it is read.
    func saveSlot(_ slot: String, keys: SessionKeys, expiresAfter seconds: UInt32) throws {
        _ = try save(slot, keys: keys, timeout: seconds)
    }

    /// The keys of `slot` while it lasts; nil when absent, expired or unreadable.
    func loadSlot(_ slot: String) -> SessionKeys? {
        var directory = sessionDirectory()
        return (try? load(slot, extend: false, directory: &directory))??.0
    }

    private func save(_ slot: String, keys: SessionKeys, timeout: UInt32) throws -> Backend {
        let record = try keys.encode(header: Self.magic, timeout: timeout, lastUse: time.seconds())
        var keyringRefusal: String?
        if forced != .directory {
            let added = record.withUnsafeBytes { raw in
                valueOrErrno("add_key") { locket_add_key("user", description(slot), raw.baseAddress, raw.count, locket_key_spec_user_keyring()) }
            }
            switch added {
            case .success(let serial):
                let key = Int32(truncatingIfNeeded: serial)
                // Readable by the same user from any login session, not only by possessors.
                _ = locket_keyctl_setperm(key, locket_key_permissions())
                _ = locket_keyctl_set_timeout(key, timeout)
                // An older copy in the directory must not outlive this one.
                if let dir = openDirectory() { wipeAndUnlink(name(slot), in: dir.descriptor) }
                return .keyring
            case .failure(let refusal):
                if forced == .keyring {
                    throw KeychainError(.io, "the kernel keyring refused the session: \(refusal)",
                                        reason: .keyringRefused(directory: directory))
                }
                keyringRefusal = refusal.description
            }
        }
        do {
            let dir = try prepareDirectory()
            try record.withUnsafeBytes { try FileIO.writeAtomically(name(slot), in: dir.descriptor, $0, path: file(slot), durable: false) }
            // The file's modification time is the last use, on the environment's clock.
            Self.setTimes(time.timestamp(), at: name(slot), in: dir.descriptor)
            return .directory
        } catch let error as KeychainError where keyringRefusal != nil {
            throw KeychainError(error.code, "the kernel keyring refused the session (\(keyringRefusal!)), and \(error.message)")
        }
    }

    // MARK: - Loading

    /// The session file `name` in the session directory `dir`, open for
    /// reading and touching: nil when there is none (or a link is there);
    /// refused when it is there but not this user's private file.
    private func openSessionFile(_ name: String, in dir: Int32, path: String) throws -> PrivateFile? {
        do throws(PrivateFile.Failure) {
            return try PrivateFile(name, in: dir, access: O_RDWR, rule: .privateFile)
        } catch .refused {
            throw KeychainError(.io, "the session file \(path) is not private to this user; remove it")
        } catch {
            return nil
        }
    }

    /// What a loaded session says about itself.
    package struct Info {
        var backend: Backend
        /// Seconds of inactivity before it expires; 0 for never.
        var timeout: UInt32
        /// Seconds since 1970 of the last use, this one included.
        var lastUse: Int64
        /// Seconds since 1970 when it was read.
        var now: Int64

        var secondsLeft: Int64? { timeout == 0 ? nil : max(0, lastUse + Int64(timeout) - now) }
    }

    /// The keys of `tier`, extending its inactivity timeout; nil when locked or expired.
    package func load(_ tier: ProtectionClass.Tier, extend: Bool = true) throws -> (SessionKeys, Info)? {
        var directory = sessionDirectory()
        return try load(tier.rawValue, extend: extend, directory: &directory)
    }

    /// `load(_:extend:)` in the session directory of `directory`, opened by
    /// whichever tier first needs it: an opening reads both tiers, through
    /// one opening (and one check) of the directory.
    func load(_ tier: ProtectionClass.Tier, extend: Bool, directory: inout Directory) throws -> (SessionKeys, Info)? {
        try load(tier.rawValue, extend: extend, directory: &directory)
    }

    private func load(_ slot: String, extend: Bool, directory: inout Directory) throws -> (SessionKeys, Info)? {
        if forced != .directory, let found = try loadFromKeyring(slot, extend: extend) { return found }
        if forced != .keyring { return try loadFromDirectory(slot, extend: extend, directory: &directory) }
        return nil
    }

    /// The session directory as `openDirectory` judges it, opened at the
    /// first use and not again: nil (no session there) when it is missing
    /// or not this user's and private. Noncopyable: the descriptor is closed
    /// once, with it.
    struct Directory: ~Copyable {
        private let path: String
        private var file: PrivateFile?
        private var opened = false

        init(_ path: String) { self.path = path }

        mutating func descriptor() -> Int32? {
            if !opened {
                file = try? PrivateFile(path, rule: .privateDirectory)
                opened = true
            }
            return file?.descriptor
        }
    }

    /// A `Directory` for the loads of one opening (or one look at both tiers).
    func sessionDirectory() -> Directory { Directory(directory) }

    private func loadFromDirectory(_ slot: String, extend: Bool, directory: inout Directory) throws -> (SessionKeys, Info)? {
        let path = file(slot)
        // Keys are only trusted from a directory nobody else could have written into.
        guard let dir = directory.descriptor() else { return nil }
        guard let sessionFile = try openSessionFile(name(slot), in: dir, path: path) else { return nil }
        guard sessionFile.size > 0, sessionFile.size <= SessionKeys.maximumSize else {
            throw KeychainError(.io, "the session file \(path) is not private to this user; remove it")
        }
        let buffer = try SecureBytes(count: sessionFile.size)
        let n = buffer.withUnsafeMutableBytes { (try? sessionFile.read(into: $0).get()) ?? -1 }
        guard n == buffer.count, let (keys, timeout) = try SessionKeys.decode(buffer, header: Self.magic) else {
            throw KeychainError(.decode, "the session file \(path) is damaged", reason: .sessionDamaged)
        }
        if timeout > 0 {
            let now = time.timestamp(), modified = sessionFile.status.st_mtim
            let idleNanoseconds = Int64(now.tv_sec - modified.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec - modified.tv_nsec)
            if idleNanoseconds >= Int64(timeout) * 1_000_000_000 {
                wipeAndUnlink(name(slot), in: dir)
                return nil
            }
            // The file's modification time is the last use: touching it extends the session.
            if extend { Self.setTimes(now, fd: sessionFile.descriptor) }
        }
        let now = time.seconds()
        return (keys, Info(backend: .directory, timeout: timeout, lastUse: now, now: now))
    }

    /// Sets a session file's access and modification times to `stamp` (an array would be allocated on every lookup).
    private static func setTimes(_ stamp: timespec, fd: Int32 = -1, at name: String? = nil, in directory: Int32 = -1) {
        var stamps = (stamp, stamp)
        withUnsafeMutablePointer(to: &stamps) { pair in
            pair.withMemoryRebound(to: timespec.self, capacity: 2) { times in
                if let name {
                    _ = nothingOrErrno("utimensat") { utimensat(directory, name, times, AT_SYMLINK_NOFOLLOW) }
                } else {
                    _ = nothingOrErrno("futimens") { futimens(fd, times) }
                }
            }
        }
    }

    /// What the session of `tier` says, without extending it.
    func peek(_ tier: ProtectionClass.Tier) throws -> Info? {
        if forced != .directory, let serial = keyringSerial(tier.rawValue) {
            let buffer = try SecureBytes(count: SessionKeys.maximumSize)
            let n = buffer.withUnsafeMutableBytes { locket_keyctl_read(serial, $0.baseAddress, $0.count) }
            if n > 0, n <= buffer.count, let (timeout, lastUse) = SessionKeys.header(try buffer.prefix(n), header: Self.magic) {
                return Info(backend: .keyring, timeout: timeout, lastUse: lastUse, now: time.seconds())
            }
        }
        guard forced != .keyring, let dir = openDirectory(),
              let sessionFile = try? PrivateFile(name(tier.rawValue), in: dir.descriptor, rule: .privateFile),
              sessionFile.size > 0, sessionFile.size <= SessionKeys.maximumSize else { return nil }
        let record = try SecureBytes(count: sessionFile.size)
        let n = record.withUnsafeMutableBytes { (try? sessionFile.read(into: $0).get()) ?? -1 }
        guard n == record.count, let (timeout, _) = SessionKeys.header(record, header: Self.magic) else { return nil }
        let info = Info(backend: .directory, timeout: timeout, lastUse: Int64(sessionFile.status.st_mtim.tv_sec), now: time.seconds())
        if timeout > 0, info.secondsLeft == 0 { return nil }
        return info
    }

    // MARK: - Removing

    /// Forgets `tier` everywhere it might be, including the temporary file of
    /// an unlock that was killed before it could rename it into place.
    func remove(_ tier: ProtectionClass.Tier) {
        let slot = tier.rawValue
        while let serial = keyringSerial(slot) {
            if locket_keyctl_invalidate(serial) != 0, locket_keyctl_unlink(serial, locket_key_spec_user_keyring()) != 0 { break }
        }
        // Only a directory of ours can hold our session files: one someone else
        // made is neither listed nor written to.
        guard let dir = openDirectory() else { return }
        wipeAndUnlink(name(slot), in: dir.descriptor)
        let prefix = "\(name(slot)).tmp."
        guard case .success(let listing) = valueOrErrno("dup", { dup(dir.descriptor) }) else { return }
        guard let stream = fdopendir(listing) else {
            close(listing)
            return
        }
        var leftovers: [String] = []
        while let entry = readdir(stream) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if entryName.hasPrefix(prefix) { leftovers.append(entryName) }
        }
        closedir(stream)
        for leftover in leftovers { wipeAndUnlink(leftover, in: dir.descriptor) }
    }

    private func wipeAndUnlink(_ name: String, in directory: Int32) {
        // Overwrite before unlinking: tmpfs pages are not swapped out with their
        // contents intact, but a plain unlink would leave them until reused.
        if let file = try? PrivateFile(name, in: directory, access: O_WRONLY, rule: .ownFile), file.size > 0 {
            let zeros = [UInt8](repeating: 0, count: file.size)
            _ = zeros.withUnsafeBytes { file.write($0, at: 0) }
        }
        _ = nothingOrErrno("unlinkat") { unlinkat(directory, name, 0) }
    }

    /// The session directory, open, when it is this user's and private (mode
    /// 700, not a symbolic link); nil otherwise. In /dev/shm anyone can make
    /// `locket-UID` first: such a directory reads as no session, and nothing
    /// is ever read from it or written to it.
    func openDirectory() -> PrivateFile? {
        try? PrivateFile(directory, rule: .privateDirectory)
    }

    /// The session directory, open: created 0700 when missing, refused
    /// (with what is wrong) when it exists but is not this user's and private.
    private func prepareDirectory() throws -> PrivateFile {
        if let dir = openDirectory() { return dir }
        var st = stat()
        if lstat(directory, &st) != 0 {
            try FileIO.makeDirectories(directory)
            if let dir = openDirectory() { return dir }
            try nothingOrErrno("lstat") { lstat(directory, &st) }.get { KeychainError(.io, "cannot create the session directory \(directory): \($0)") }
        }
        guard st.st_mode & S_IFMT == S_IFDIR else {
            throw KeychainError(.io, "the session directory \(directory) is \(PrivateFile.kindName(st.st_mode)); locket keeps no keys there")
        }
        throw KeychainError(.io, "the session directory \(directory) is not private to this user (owner uid \(st.st_uid), mode \(String(st.st_mode & 0o777, radix: 8))); locket keeps no keys there")
    }
}
