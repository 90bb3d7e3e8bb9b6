import CLocketSQLite
import CSQLite
import CSodium
import Glibc
import LocketSupport

/// One SQLite connection, open only while a transaction runs (or, once,
/// from a keychain's opening to its first call: `Keychain.open(keepsFileOpen:)`).
///
/// The connection uses `locking_mode=EXCLUSIVE` (SPEC §11: the read path
/// writes nothing): WAL mode then keeps its index in heap memory, so there is
/// no `-shm` to rebuild (the unix VFS truncated and rewrote it in every
/// process) and nothing to hijack beside the keychain. The price is that the
/// connection holds an exclusive lock on the file from its first read until
/// it is closed, so it is closed at the end of every outermost `transaction`
/// (which also checkpoints and empties the WAL) and opened again by the next:
/// nothing slow (a password hash, a prompt, a child process, a server's idle
/// time) ever runs while it holds the file. Every statement must therefore
/// run inside `transaction`.
final class Database {
    private(set) var handle: OpaquePointer?
    let path: String
    /// Nested `transaction` calls (the outermost one closes the connection).
    private var depth = 0
    /// A read transaction `transaction(keepOpen:)` left open: the next
    /// outermost transaction joins it (a writer's commits it first), so that
    /// a lookup reads the header and its items in one transaction, without a
    /// COMMIT and a BEGIN between them (7 k instructions, bench/README.md
    /// "A lookup above the process floor").
    private var lingering = false

    /// How long a command waits for another process's transaction before
    /// reporting errSecIO. Concurrent `locket` commands hold the file for
    /// milliseconds, so this only runs out when something is stuck.
    static let busyTimeoutMilliseconds: Int32 = 10_000

    /// Opens the file at `path` (the caller has checked it and claimed its
    /// companions, `Keychain.open`, or made it, `Keychain.create`).
    init(path: String, create: Bool) throws {
        self.path = path
        if create { locket_sqlite_record_write_errors() }
        try connect(create: create)
    }

    /// The file at `path`, not opened until the first transaction (which
    /// checks it as `Keychain.open` does): a keychain just made.
    init(unopened path: String) {
        self.path = path
    }

    /// Whether a transaction is running (a nested call joins it).
    var inTransaction: Bool { depth > 0 }

    private func connect(create: Bool) throws {
        // Taking the exclusive lock goes through a shared one, which SQLite
        // keeps while it waits: two waiters would wait for each other until
        // the timeout. So a connection that finds the file held closes
        // (dropping its shared lock), waits a random while (so that waiters do
        // not move in step) and tries again, up to the busy timeout.
        var waited: Int32 = 0
        var ceiling: UInt32 = 2
        while true {
            let rc = try openAndLock(create: create)
            if rc & 0xff != SQLITE_BUSY || waited >= Self.busyTimeoutMilliseconds {
                if rc != SQLITE_OK {
                    defer { close() }
                    try check(rc)
                }
                return
            }
            close()
            let pause = 1 + randombytes_uniform(ceiling)
            usleep(pause * 1000)
            waited += Int32(pause)
            ceiling = min(ceiling * 2, 32)
        }
    }

    /// Opens the connection and takes the file's lock (exclusive, kept until
    /// close) by reading the header; returns the result code of that read.
    private func openAndLock(create: Bool) throws -> Int32 {
        var flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX
        if create { flags |= SQLITE_OPEN_CREATE }
        let rc = sqlite3_open_v2(path, &handle, flags, locket_sqlite_vfs())
        if rc != SQLITE_OK {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            handle = nil
            throw KeychainError(.io, "cannot open \(path): \(message)")
        }
        sqlite3_extended_result_codes(handle, 1)
        // No busy handler: SQLite's would wait while keeping a shared lock,
        // and waiters that each keep one wait for each other (see connect).
        // Once this connection holds the file, no other process can.
        // Before the first access to the WAL: its index then lives in this
        // process's memory, and no -shm is opened or made.
        sqlite3_exec(handle, "PRAGMA locking_mode=EXCLUSIVE", nil, nil, nil)
        // Keep the -wal file between commands: creating and deleting it in
        // every writing process costs more than the write itself (and the
        // VFS keeps its blocks too: see `transaction`)...
        var persist: Int32 = 1
        sqlite3_file_control(handle, "main", SQLITE_FCNTL_PERSIST_WAL, &persist)
        // ...but empty: see `transaction` (journal_size_limit).
        if create { return SQLITE_OK }
        // The lock comes with the first read: that of the schema, which the
        // first statement needs anyway, here without a statement of its own
        // (PRAGMA schema_version's cost 6 k instructions more, bench/README.md
        // "A lookup above the process floor"). A schema SQLite cannot read
        // (SQLITE_ERROR) is left to that first statement, which says what it is.
        let read = sqlite3_table_column_metadata(handle, "main", "sqlite_master", nil, nil, nil, nil, nil, nil)
        return read & 0xff == SQLITE_ERROR ? SQLITE_OK : read
    }

    /// Opens the connection again after `close`, with the checks `Keychain.open`
    /// made: the file must still be the user's private regular file.
    private func reconnect() throws {
        if try FileIO.checkPrivateFile(path, what: "keychain") { try Self.claimCompanions(of: path) }
        try connect(create: false)
    }

    /// Closes the connection: checkpoints and empties the WAL, and releases
    /// the file to other processes. The next transaction opens it again.
    func close() {
        guard let handle else { return }
        // A statement still alive would keep the connection, and its lock, open.
        assert(sqlite3_next_stmt(handle, nil) == nil, "a statement outlived its transaction")
        // A lingering read transaction has nothing to keep: closing ends it.
        lingering = false
        sqlite3_close_v2(handle)
        self.handle = nil
    }

    deinit { close() }

    /// Maps a SQLite result code to a KeychainError, or returns when it is a success.
    @discardableResult
    func check(_ rc: Int32, _ context: @autoclosure () -> String = "") throws -> Int32 {
        switch rc & 0xff {
        case SQLITE_OK, SQLITE_ROW, SQLITE_DONE:
            return rc
        case SQLITE_CONSTRAINT:
            throw KeychainError(.duplicateItem)
        case SQLITE_BUSY, SQLITE_LOCKED:
            throw KeychainError(.io, "the keychain stayed busy for \(Self.busyTimeoutMilliseconds / 1000) s (another process holds it)")
        case SQLITE_NOTADB:
            throw KeychainError(.invalidKeychain, "\(path) is not a keychain")
        case SQLITE_CORRUPT:
            throw KeychainError(.decode, "\(path) is damaged")
        case SQLITE_FULL:
            throw writeFailure(full: true) ?? KeychainError(.io, "the disk is full")
        case SQLITE_READONLY, SQLITE_PERM, SQLITE_CANTOPEN:
            throw KeychainError(.io, "cannot write \(path)")
        case SQLITE_IOERR:
            if let failure = writeFailure(full: false) { throw failure }
            fallthrough
        default:
            let message = String(cString: sqlite3_errmsg(handle))
            let where_ = context()
            throw KeychainError(.io, where_.isEmpty ? "\(path): \(message)" : "\(path): \(where_): \(message)")
        }
    }

    /// A write that failed for want of room, in words: the file size limit
    /// (EFBIG, or a write cut short at the limit, which SQLite calls FULL)
    /// or a full disk; nil for any other I/O error.
    private func writeFailure(full: Bool) -> KeychainError? {
        let code = locket_sqlite_take_write_errno()
        if code == EFBIG { return sizeLimitReached(FileIO.fileSizeLimit) }
        if code == ENOSPC { return KeychainError(.io, "the disk is full") }
        guard full else { return nil }
        // A write cut short sets no errno; one cut at the limit left a file of at least that size.
        if let limit = FileIO.fileSizeLimit, ([""] + Self.companionSuffixes).contains(where: { FileIO.size(path + $0) ?? 0 >= limit }) {
            return sizeLimitReached(limit)
        }
        return nil
    }

    /// A write the file size limit (`ulimit -f`, RLIMIT_FSIZE) refused: the
    /// transaction rolls back, the keychain is as it was.
    private func sizeLimitReached(_ limit: Int?) -> KeychainError {
        let named = limit.map { ": \(ByteSize.text($0))" } ?? ""
        return KeychainError(.io, "cannot write \(path): it would grow past the file size limit (RLIMIT_FSIZE, ulimit -f\(named))")
    }

    func execute(_ sql: String) throws {
        try check(sqlite3_exec(handle, sql, nil, nil, nil), sql)
    }

    func prepare(_ sql: String) throws -> Statement {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &stmt, nil)
        // locket's statements are fixed: one that no longer compiles means the
        // file's tables are not a keychain's (another SQLite file, a flipped
        // byte in the schema, an edit), not an I/O error; SQLite's wording helps no one.
        if rc & 0xff == SQLITE_ERROR {
            throw KeychainError(.invalidKeychain, "\(path) is not a locket keychain, or its tables were changed")
        }
        try check(rc)
        return Statement(stmt!, database: self)
    }

    /// Runs `body` in one transaction: IMMEDIATE for writers so that two
    /// writers serialize at BEGIN (where the busy timeout applies) instead of
    /// failing at their first write. The outermost transaction opens the
    /// connection if it is closed and closes it at the end, committed or not
    /// (unless `keepOpen`: then a reader's transaction stays open too, for the
    /// next one to join): its statements must not outlive `body`.
    func transaction<T>(write: Bool, keepOpen: Bool = false, _ body: () throws -> T) throws -> T {
        if depth == 0 && handle == nil { try reconnect() }
        // Which errno a failed write had (a file size limit, a full disk): writers
        // only, from this transaction on (a failure of an earlier one's ignored checkpoint is not this one's).
        if write && depth == 0 {
            locket_sqlite_record_write_errors()
            _ = locket_sqlite_take_write_errno()
        }
        depth += 1
        defer {
            depth -= 1
            if depth == 0 && !keepOpen { close() }
        }
        if lingering {
            lingering = false
            if write {
                try execute("COMMIT")
                try execute("BEGIN IMMEDIATE")
            }
        } else {
            try execute(write ? "BEGIN IMMEDIATE" : "BEGIN")
        }
        // The exclusive lock is held now: no process of a release before
        // exclusive locking has the file open, so its -shm can go.
        if write && depth == 1 {
            unlink(path + Self.staleSharedMemorySuffix)
            // A writer's WAL is checkpointed and emptied at close, so the
            // next process has nothing to recover: SQLite truncates it to
            // zero, which the "locket" VFS turns into zeroing it in place,
            // keeping its blocks (CLocketSQLite/vfs.c). Set by writers
            // only: a read leaves nothing in the WAL, and each statement
            // prepared is paid by every `find`.
            sqlite3_exec(handle, "PRAGMA journal_size_limit=0", nil, nil, nil)
        }
        do {
            let result = try body()
            if depth == 1 && keepOpen && !write {
                lingering = true
            } else {
                try execute("COMMIT")
            }
            return result
        } catch {
            _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            throw error
        }
    }

    /// Runs `body` inside the current transaction, or in a read transaction
    /// of its own when none is running (a statement outside any transaction
    /// would leave the connection, and its lock, open).
    func reading<T>(_ body: () throws -> T) throws -> T {
        depth > 0 ? try body() : try transaction(write: false, body)
    }

    var changes: Int { Int(sqlite3_changes(handle)) }
    /// The rowid of the last row this connection inserted.
    var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }
}
