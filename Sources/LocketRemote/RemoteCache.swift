import LocketCore
import CSodium
import Glibc
import LocketSupport

/// The offline cache of a remote keychain (SPEC §17 "Offline", docs/REMOTE.md
/// "The offline cache"): what the server held, at one moment, for the
/// after-first-unlock items of the groups this device holds, so that those
/// items can be read within `--max-stale` while the server is unreachable.
///
/// It holds only what the database holds: the meta rows (the keybag wrapped
/// by the password's KEK), this device's group keys as wrapped in the
/// database (sealed to its X25519 key, which stays in its own file), and
/// the items' rows (sealed values, primary-key digest, blind digests). The
/// whole is sealed again with a key derived from the keychain's blind-index
/// key, which needs this machine's session (after first unlock): so the file
/// reveals nothing new, and its time (`syncedAt`) can't be edited to look fresh.
struct RemoteCache {
    /// One item row as the server holds it.
    struct Row {
        var id: Int64
        var ref: [UInt8]
        var itemClass: String
        var protectionClass: String
        var group: String
        var primaryKey: [UInt8]
        var attributes: [UInt8]
        var data: [UInt8]
        var digests: Set<Int64>
    }

    /// When the snapshot's transaction began (µs since 1970, this machine's clock).
    var syncedAt: Int64
    var deviceID: Int64
    /// Every meta row of the keychain, keybag rows included.
    var meta: [String: [UInt8]]
    /// This device's current group keys as the database wraps them.
    var wrappedKeys: [(group: String, wrapped: [UInt8])]
    var rows: [Row]

    static let magic = Array("LKRC".utf8)
    static let version: UInt16 = 1
    /// A cache larger than this is refused (a keychain's after-first-unlock items are far smaller).
    static let limit = 256 << 20

    // MARK: - Where it lives

    /// `$XDG_STATE_HOME/locket/remote-HASH.cache`, HASH of the URL: found
    /// before anything is known of the keychain (the server is unreachable).
    static func path(url: String, environment: Environment) throws -> String {
        var digest = [UInt8](repeating: 0, count: 16)
        let bytes = Array(url.utf8)
        crypto_generichash(&digest, 16, bytes, UInt64(bytes.count), nil, 0)
        return try environment.stateDirectory() + "/locket/remote-" + Hex.encode(digest) + ".cache"
    }

    /// The audit records of reads answered from the cache, to append on the next contact.
    static func pendingAuditPath(keychainID: [UInt8], environment: Environment) throws -> String {
        try environment.stateDirectory() + "/locket/remote-" + Hex.encode(keychainID) + ".audit"
    }

    /// The sealing key: needs the blind-index key, so this machine's session.
    static func key(indexKey: SecureBytes, keychainID: [UInt8]) throws -> SecureBytes {
        try KeyDerivation.derive(indexKey, KeyDerivation.Context("locket.remote.cache.v1").with(keychainID))
    }

    // MARK: - The file

    /// The file: magic, version, keychain id in the clear (to find the
    /// session), then the snapshot sealed with `key`.
    func sealed(keychainID: [UInt8], key: SecureBytes) -> [UInt8] {
        var out = RemoteCache.magic
        BigEndian.append(RemoteCache.version, to: &out)
        out += keychainID
        return out + SecretBox.seal(encoded(), key: key)
    }

    /// The keychain id a cache file names, or errSecDecode.
    static func keychainID(of file: [UInt8]) throws -> [UInt8] {
        guard file.count > 22, Array(file.prefix(4)) == magic, BigEndian.read(UInt16.self, file, at: 4) == version else {
            throw KeychainError(.decode, "not a locket offline cache")
        }
        return Array(file[6..<22])
    }

    /// Opens a cache file with `key`; errSecDecode when it was altered or is another keychain's.
    static func open(_ file: [UInt8], key: SecureBytes) throws -> RemoteCache {
        _ = try keychainID(of: file)
        let body = try SecretBox.open(Array(file.dropFirst(22)), key: key, what: "the offline cache")
        return try body.withUnsafeBytes { try decode(Array($0)) }
    }

    /// Reads the cache file at `path`: nil when there is none. Refused
    /// (errSecIO) when it is a link, not a regular file, not the user's own,
    /// or writable by others, as every file locket reads in its state directory.
    static func read(_ path: String) throws -> [UInt8]? {
        guard let file = try FileIO.openPrivate(path, what: "the offline cache") else { return nil }
        return try file.closeAfter { file in
            guard file.size <= limit else { throw KeychainError(.io, "the offline cache \(path) is larger than \(ByteSize.text(limit))") }
            var out = [UInt8](repeating: 0, count: file.size)
            guard out.withUnsafeMutableBytes({ (try? file.read(into: $0).get()) == $0.count }) else {
                throw KeychainError(.io, "cannot read the offline cache \(path)")
            }
            return out
        }
    }

    // MARK: - Encoding

    private func encoded() -> [UInt8] {
        var out: [UInt8] = []
        func bytes(_ b: [UInt8]) { BigEndian.append(UInt32(b.count), to: &out); out += b }
        func text(_ s: String) { bytes(Array(s.utf8)) }
        BigEndian.append(syncedAt, to: &out)
        BigEndian.append(deviceID, to: &out)
        BigEndian.append(UInt32(meta.count), to: &out)
        for (name, value) in meta.sorted(by: { $0.key < $1.key }) { text(name); bytes(value) }
        BigEndian.append(UInt32(wrappedKeys.count), to: &out)
        for (group, wrapped) in wrappedKeys { text(group); bytes(wrapped) }
        BigEndian.append(UInt32(rows.count), to: &out)
        for row in rows {
            BigEndian.append(row.id, to: &out)
            bytes(row.ref); text(row.itemClass); text(row.protectionClass); text(row.group)
            bytes(row.primaryKey); bytes(row.attributes); bytes(row.data)
            BigEndian.append(UInt32(row.digests.count), to: &out)
            for digest in row.digests.sorted() { BigEndian.append(digest, to: &out) }
        }
        return out
    }

    private static func decode(_ body: [UInt8]) throws -> RemoteCache {
        var offset = 0
        func damaged() -> KeychainError { KeychainError(.decode, "the offline cache is damaged") }
        func int<T: FixedWidthInteger>(_: T.Type) throws -> T {
            guard let v = BigEndian.read(T.self, body, at: offset) else { throw damaged() }
            offset += MemoryLayout<T>.size
            return v
        }
        func bytes() throws -> [UInt8] {
            let n = Int(try int(UInt32.self))
            guard n <= body.count - offset else { throw damaged() }
            defer { offset += n }
            return Array(body[offset..<offset + n])
        }
        func text() throws -> String {
            guard let s = String(validating: try bytes(), as: UTF8.self) else { throw damaged() }
            return s
        }
        func count() throws -> Int {
            let n = Int(try int(UInt32.self))
            guard n <= body.count - offset else { throw damaged() }
            return n
        }
        var cache = RemoteCache(syncedAt: try int(Int64.self), deviceID: try int(Int64.self), meta: [:], wrappedKeys: [], rows: [])
        for _ in 0..<(try count()) { cache.meta[try text()] = try bytes() }
        for _ in 0..<(try count()) { cache.wrappedKeys.append((try text(), try bytes())) }
        for _ in 0..<(try count()) {
            var row = Row(id: try int(Int64.self), ref: try bytes(), itemClass: try text(), protectionClass: try text(), group: try text(),
                          primaryKey: try bytes(), attributes: try bytes(), data: try bytes(), digests: [])
            for _ in 0..<(try count()) { row.digests.insert(try int(Int64.self)) }
            cache.rows.append(row)
        }
        guard offset == body.count else { throw damaged() }
        return cache
    }
}

// MARK: - Reads answered from the cache, recorded for the server's audit

extension RemoteCache {
    /// One record: an item's reference and when it was read (µs since 1970).
    static func appendPendingAudit(_ refs: [[UInt8]], keychainID: [UInt8], environment: Environment) throws {
        let path = try pendingAuditPath(keychainID: keychainID, environment: environment)
        let now = environment.time.milliseconds() * 1000
        var record: [UInt8] = []
        for ref in refs {
            BigEndian.append(UInt32(ref.count), to: &record)
            record += ref
            BigEndian.append(now, to: &record)
        }
        func failed(_ failure: Errno) -> KeychainError { KeychainError(.io, "cannot record an offline read in \(path): \(failure)") }
        let file = try PrivateFile(path, access: O_WRONLY | O_APPEND, creating: 0o600, rule: .privateFile) { failure in
            switch failure {
            case .refused: KeychainError(.io, "\(path) is not this user's private file; offline reads are not recorded there")
            case .unreadable(let errno): failed(errno)
            case .missing, .symbolicLink: failed(Errno(failure == .missing ? ENOENT : ELOOP))
            }
        }
        // A read is answered only once it is recorded.
        try record.withUnsafeBytes { file.write($0) }.get(or: failed)
        try nothingOrErrno("fsync") { fsync(file.descriptor) }.get(or: failed)
    }

    /// The pending records (reference, time), nil when there are none.
    static func pendingAudit(at path: String) throws -> [(ref: [UInt8], at: Int64)]? {
        guard let file = try read(path) else { return nil }
        var records: [(ref: [UInt8], at: Int64)] = []
        var offset = 0
        while offset < file.count {
            guard let n = BigEndian.read(UInt32.self, file, at: offset).map(Int.init), n <= file.count - offset - 12,
                  let at = BigEndian.read(Int64.self, file, at: offset + 4 + n) else {
                // A torn last record (a crash mid-append): the complete ones before it still count.
                break
            }
            records.append((Array(file[offset + 4..<offset + 4 + n]), at))
            offset += 4 + n + 8
        }
        return records
    }
}
