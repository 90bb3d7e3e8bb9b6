import Glibc
import LocketCore
import LocketLocator
import LocketSupport
import Synchronization

/// Which keychain a call works on and who is calling: as the command line
/// decides at every command (SPEC §2, §6), the module decides at every call.
struct KeychainTarget: Hashable {
    /// The keychain, as LocketCore's locator names it.
    let location: KeychainLocation
    /// The calling app's entitlements file; nil: the owner.
    let entitlements: String?

    /// `LOCKET_KEYCHAIN` resolved as the command line resolves it
    /// (`KeychainLocator`: a path, a NAME in `$XDG_DATA_HOME/locket/`, a
    /// `postgres://` URL, or a remote registered as NAME where no such file
    /// exists), else the default keychain, `login`; `LOCKET_ENTITLEMENTS`,
    /// else none.
    ///
    /// The one place the module names a keychain.
    static func current() throws -> KeychainTarget {
        // The variables it depends on, as they are now: while they are as at
        // the last call, so is the answer (a call is a few microseconds).
        var variables: [String?] = []
        for name in ["LOCKET_KEYCHAIN", "LOCKET_ENTITLEMENTS", "XDG_DATA_HOME", "HOME"] {
            let value: UnsafeMutablePointer<CChar>? = getenv(name)
            variables.append(value.map { String(cString: $0) })
        }
        if let (seen, target) = lastTarget.withLock({ $0 }), seen == variables { return target }
        let environment = Environment.process
        let spec = try environment["LOCKET_KEYCHAIN"].flatMap { $0.isEmpty ? nil : $0 }
        let target = KeychainTarget(location: try KeychainLocator.resolve(spec, environment: environment),
                                    entitlements: try environment["LOCKET_ENTITLEMENTS"].flatMap { $0.isEmpty ? nil : $0 })
        // A NAME is a file, or a registered remote while no file has the
        // name: that can change between calls, so it is resolved at each.
        if let spec, !spec.contains("/"), !KeychainLocator.isURL(spec) { return target }
        lastTarget.withLock { $0 = (variables, target) }
        return target
    }

    private static let lastTarget = Mutex<([String?], KeychainTarget)?>(nil)

    /// Opens the keychain for its caller, as `locket -e ENTITLEMENTS` would.
    func open() throws -> Keychain {
        let caller: Caller = try entitlements.map { .app(try Entitlements.load(path: $0)) } ?? .owner
        return try Keychain.open(location, caller: caller, environment: .process)
    }
}

/// The keychains this process has open, shared by its threads. A call runs
/// under the pool's lock with a keychain kept from an earlier call when
/// nothing changed since: not its file (`FileChanges`), not the session
/// (another process's `locket lock` or `unlock`, or the auto-lock timeout:
/// `Keychain.sessionFingerprint`), not the entitlements file. Anything else
/// opens it again, as the next command would. A keychain in a database,
/// which other machines change unseen, is opened for each call and never
/// kept, as the ssh-agent opens it for each request. Processes are kept
/// apart by the engine's transactions, threads by this lock: one call at a
/// time per process, never a prompt under it (`Operation`).
final class KeychainPool: @unchecked Sendable {
    static let shared = KeychainPool()

    private let lock = NSLock()
    private var open: [KeychainTarget: OpenKeychain] = [:]
    private var calls: UInt64 = 0
    /// At most this many keychains are kept open.
    static let maximumOpen = 4
    private let files = FileChanges()

    /// Runs `body` with the keychain of `target`.
    func withKeychain<T>(_ target: KeychainTarget, _ body: (OpenKeychain) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(try current(target))
    }

    /// A keychain of the caller's own, not kept: for an operation that
    /// gives proofs (`Operation`), which die with it.
    func openPrivate(_ target: KeychainTarget) throws -> Keychain {
        lock.lock()
        defer { lock.unlock() }
        return try target.open()
    }

    /// The kept keychain of `target` while still current, else a new one.
    private func current(_ target: KeychainTarget) throws -> OpenKeychain {
        let changes = files.drain()
        if !changes.isEmpty {
            for (kept, entry) in open where entry.file.map(changes.affect) ?? true { open[kept] = nil }
        }
        calls += 1
        if let entry = open[target] {
            if try entry.isCurrent() {
                entry.lastCall = calls
                return entry
            }
            open[target] = nil
        }
        guard let path = target.location.filePath else {
            // Not kept: nothing here would see another machine's write.
            return OpenKeychain(try target.open(), file: nil, entitlements: nil, probe: SessionProbe(), fingerprint: [])
        }
        guard let file = KeychainPath(path) else {
            throw KeychainError(.noSuchKeychain, "no keychain at \(path)", reason: .noKeychain(path: path))
        }
        // Watched (and the entitlements file's state taken) before the keychain is read: a change after is seen.
        let watched = files.watch(file)
        let entitlements = target.entitlements.map(FileStamp.init)
        let keychain = try target.open()
        let probe = SessionProbe()
        let entry = OpenKeychain(keychain, file: file, entitlements: entitlements, probe: probe,
                                 fingerprint: try keychain.session.reloadSession(extend: false, probe: probe))
        entry.lastCall = calls
        if watched {
            // A program that moves between keychains keeps the few it used last (and their keys) only.
            if open.count >= KeychainPool.maximumOpen, let oldest = open.min(by: { $0.value.lastCall < $1.value.lastCall }) {
                open[oldest.key] = nil
            }
            open[target] = entry
        }
        return entry
    }
}

/// A keychain kept open by the pool, and the searches it can answer again
/// from the rows it read (`Keychain.searchHolding`): sealed values, opened
/// anew with the keys of the moment at every call, so a lock in between
/// fails the next call as it would fail a command.
final class OpenKeychain {
    let keychain: Keychain
    /// Its file, watched; nil for a keychain in a database (never kept).
    let file: KeychainPath?
    private let entitlements: FileStamp?
    private let probe: SessionProbe
    private var fingerprint: [UInt8]
    /// When the session's timeout was last restarted by a use (seconds).
    private var extended = Clock.seconds()
    /// The pool's count of calls at this keychain's last use.
    var lastCall: UInt64 = 0
    private var held: [[UInt8]: (search: HeldSearch, used: UInt64)] = [:]
    private var heldBytes = 0
    private var uses: UInt64 = 0

    /// At most this many searches, and this many bytes of rows, are held.
    static let maximumHeld = 256
    static let maximumHeldBytes = 4 << 20

    init(_ keychain: Keychain, file: KeychainPath?, entitlements: FileStamp?, probe: SessionProbe, fingerprint: [UInt8]) {
        self.keychain = keychain
        self.file = file
        self.entitlements = entitlements
        self.probe = probe
        self.fingerprint = fingerprint
    }

    /// Whether the session and the entitlements file are as they were; a use
    /// restarts the session's timeout (at most once a second: its stamp
    /// counts seconds), as every command's use does.
    func isCurrent() throws -> Bool {
        if let entitlements, entitlements != FileStamp(entitlements.path) { return false }
        let now = Clock.seconds()
        let current = keychain.session.sessionFingerprint(extend: now != extended, probe: probe)
        extended = now
        return current == fingerprint
    }

    /// `Keychain.search`, answered from the rows of the same search made
    /// before when the file is unchanged since.
    func search(_ query: Query, limit: MatchLimit, returnData: Bool) throws -> [Item] {
        uses += 1
        let key = OpenKeychain.key(query, limit, returnData)
        if let entry = held[key] {
            held[key]!.used = uses
            let items = try keychain.searchAgain(entry.search)
            if items.isEmpty { throw KeychainError(.itemNotFound) }
            return items
        }
        let (items, search) = try keychain.searchHolding(query, limit: limit, returnData: returnData)
        if let search { hold(key, search) }
        if items.isEmpty { throw KeychainError(.itemNotFound) }
        return items
    }

    /// Forgets the held searches: this process wrote (the file's change
    /// would tell the next call too; this one may search again at once).
    func didWrite() {
        held.removeAll()
        heldBytes = 0
    }

    private func hold(_ key: [UInt8], _ search: HeldSearch) {
        let bytes = search.byteCount
        guard bytes <= OpenKeychain.maximumHeldBytes / 4 else { return }
        while !held.isEmpty && (held.count >= OpenKeychain.maximumHeld || heldBytes + bytes > OpenKeychain.maximumHeldBytes) {
            let oldest = held.min { $0.value.used < $1.value.used }!
            heldBytes -= oldest.value.search.byteCount
            held[oldest.key] = nil
        }
        held[key] = (search, uses)
        heldBytes += bytes
    }

    /// A search's identity: its class, terms (in a canonical order),
    /// protection class, synchronizable, group, reference, limit and whether
    /// the secret is read.
    private static func key(_ query: Query, _ limit: MatchLimit, _ returnData: Bool) -> [UInt8] {
        var out: [UInt8] = Array(query.itemClass.rawValue.utf8)
        out.append(returnData ? 1 : 0)
        switch limit {
        case .one: out.append(1)
        case .all: out.append(2)
        case .count(let n): out.append(3); BigEndian.append(UInt64(n), to: &out)
        }
        for (attribute, value) in query.attributes.sorted(by: { $0.0.rawValue < $1.0.rawValue }) {
            out.append(attribute.rawValue)
            BigEndian.append(UInt32(value.count), to: &out)
            out += value
        }
        if let pclass = query.accessible { out.append(0xfc); out.append(UInt8(pclass.rawValue.utf8.count)); out += Array(pclass.rawValue.utf8) }
        if let synchronizable = query.synchronizable {
            out.append(0xfd)
            out.append(synchronizable == .no ? 0 : synchronizable == .yes ? 1 : 2)
        }
        if let group = query.accessGroup { out.append(0xfe); BigEndian.append(UInt32(group.utf8.count), to: &out); out += Array(group.utf8) }
        if let ref = query.persistentRef { out.append(0xff); out += ref }
        return out
    }
}

/// Enough of a file's state to tell that it was replaced or changed.
struct FileStamp: Equatable {
    let path: String
    private let identity: [Int]

    init(_ path: String) {
        self.path = path
        var st = stat()
        guard stat(path, &st) == 0 else { identity = []; return }
        identity = [Int(st.st_dev), Int(st.st_ino), Int(st.st_size), st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                    st.st_ctim.tv_sec, st.st_ctim.tv_nsec, Int(st.st_mode)]
    }
}
