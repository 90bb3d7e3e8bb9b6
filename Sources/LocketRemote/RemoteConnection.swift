import LocketCore
import Glibc
import LocketSupport
import LocketWire

/// A connection to a PostgreSQL server through the `locket-postgres` helper
/// (SPEC §17, docs/REMOTE.md): locket's own SQL, values as binary parameters,
/// transactions retried on serialization failures. Nothing here runs for a
/// file keychain: the helper starts only when a remote keychain is opened.
public final class RemoteConnection {
    public enum Isolation: String, Sendable {
        case readCommitted = "READ COMMITTED"
        case repeatableRead = "REPEATABLE READ"
        case serializable = "SERIALIZABLE"
    }

    /// How a transaction body talks to the server.
    public struct Transaction {
        fileprivate let connection: RemoteConnection

        /// Runs one statement inside the transaction; its rows.
        @discardableResult
        public func execute(_ sql: String, _ parameters: [RemoteValue] = []) throws -> [RemoteRow] {
            try connection.run(sql, parameters)
        }
    }

    /// How many times a transaction runs at most when it keeps meeting serialization failures.
    public static let maximumAttempts = 16

    /// Taken (session level) from a transaction's second attempt on: writers
    /// all advance the one newest state link, so those that collided queue
    /// here instead of colliding again (docs/REMOTE.md has the measurement).
    static let collidedWritersLock: Int64 = 0x6c6f_636b_6574

    private let helperPath: String
    private let parameters: [(String, String)]
    private var password: [UInt8]?
    private let environment: Environment
    private var helper: HelperProcess?
    private var inTransaction = false
    /// The server's version number (PQserverVersion), e.g. 150018.
    public private(set) var serverVersion = 0

    /// Starts the helper at `helper` and connects with libpq `parameters`
    /// (keyword/value pairs: host, port, dbname, user, sslrootcert, ...).
    /// `password`, when given, goes to the helper over the stream, never in
    /// argv or environment; otherwise libpq finds it itself (PGPASSFILE,
    /// ~/.pgpass, a service file, PGPASSWORD). Network connections use
    /// sslmode=verify-full; a Unix socket directory as host needs no TLS.
    public init(helper: String, parameters: [(String, String)], password: [UInt8]? = nil, environment: Environment) throws {
        helperPath = helper
        self.parameters = parameters
        self.password = password
        self.environment = environment
        do {
            try connect()
        } catch let failure as RemoteFailure {
            throw failure.keychainError
        }
    }

    deinit {
        close()
        wipePassword()
    }

    /// Ends the helper (which rolls back anything open) and forgets the connection.
    public func close() {
        if let helper {
            var writer = FrameWriter(.close)
            try? helper.channel.write(writer.bytes)
            writer.wipe()
            helper.stop()
        }
        helper = nil
    }

    /// The helper's process id, while one runs (tests look at its argv and environment).
    public var helperProcessID: pid_t? { helper?.pid }

    /// Runs one statement outside any explicit transaction (autocommit).
    @discardableResult
    public func execute(_ sql: String, _ parameters: [RemoteValue] = []) throws -> [RemoteRow] {
        do {
            if helper == nil { try connect() }
            return try run(sql, parameters)
        } catch let failure as RemoteFailure {
            if failure.connectionLost { helper?.stop(); helper = nil }
            throw failure.keychainError
        }
    }

    /// Runs `body` in one transaction at `isolation` and commits it. On a
    /// serialization failure or deadlock (40001, 40P01) it rolls back, pauses
    /// and runs `body` again (at most `maximumAttempts` times, queued on
    /// `collidedWritersLock`), so `body` must do nothing it can't repeat. A
    /// connection lost before COMMIT is made again once; lost during COMMIT,
    /// the outcome is unknown (errSecIO). `body`'s own errors roll back.
    public func transaction<R>(isolation: Isolation = .serializable, _ body: (Transaction) throws -> R) throws -> R {
        precondition(!inTransaction, "transactions don't nest")
        var reconnected = false
        var attempt = 0
        var queued = false
        defer { if queued, helper != nil { _ = try? run("SELECT pg_advisory_unlock($1)", [.int(Self.collidedWritersLock)]) } }
        while true {
            attempt += 1
            var committing = false
            do {
                if helper == nil { try connect() }
                if attempt > 1 && !queued {
                    _ = try run("SELECT pg_advisory_lock($1)", [.int(Self.collidedWritersLock)])
                    queued = true
                }
                inTransaction = true
                defer { inTransaction = false }
                try run("BEGIN ISOLATION LEVEL \(isolation.rawValue)", [])
                let result: R
                do {
                    result = try body(Transaction(connection: self))
                } catch let failure as RemoteFailure {
                    throw failure
                } catch {
                    _ = try? run("ROLLBACK", [])
                    throw error
                }
                committing = true
                try run("COMMIT", [])
                return result
            } catch let failure as RemoteFailure {
                if failure.connectionLost {
                    helper?.stop()
                    helper = nil
                    queued = false  // a session lock ends with its session
                    if committing {
                        throw KeychainError(.io, "the connection to the PostgreSQL server was lost during COMMIT: the change may or may not have been applied")
                    }
                    guard !reconnected else { throw failure.keychainError }
                    reconnected = true
                    continue
                }
                if reconnected, case .connect = failure {
                    // The write was under way when its connection went; COMMIT was never sent.
                    throw KeychainError(failure.keychainError.code, """
                        the connection to the PostgreSQL server was lost before the change was committed, and could not be made again: \
                        the change was not applied (\(failure.keychainError.message))
                        """)
                }
                // The server aborted the transaction; end it on our side too.
                _ = try? run("ROLLBACK", [])
                guard failure.retryable, attempt < Self.maximumAttempts else { throw failure.keychainError }
                pause(attempt)
            }
        }
    }

    /// Runs `body`'s statements outside a transaction (autocommit: each
    /// statement sees its own snapshot), for reads that need no more. A
    /// connection lost on the way is made again once and `body` run again,
    /// as `transaction` does.
    public func autocommit<R>(_ body: (Transaction) throws -> R) throws -> R {
        precondition(!inTransaction, "autocommit reads don't run inside a transaction")
        var reconnected = false
        while true {
            do {
                if helper == nil { try connect() }
                return try body(Transaction(connection: self))
            } catch let failure as RemoteFailure {
                guard failure.connectionLost else { throw failure.keychainError }
                helper?.stop()
                helper = nil
                guard !reconnected else { throw failure.keychainError }
                reconnected = true
            }
        }
    }

    /// Full jitter (up to 2^attempt ms, at most 250): collided writers part.
    private func pause(_ attempt: Int) {
        let cap = min(250_000, 1_000 << min(attempt, 8))
        usleep(UInt32(Int.random(in: cap / 4...cap)))
    }

    private func connect() throws {
        let process = try HelperProcess(path: helperPath, program: .postgres, environment: environment)
        helper = process
        do {
            var hello = FrameWriter(.hello)
            hello.raw(Wire.magic)
            hello.u16(Wire.version)
            try send(hello.bytes)
            var reply = try receive()
            guard reply.kind == Wire.Kind.helloReply.rawValue else { throw try unexpected(&reply) }
            guard try reply.raw(Wire.magic.count) == Wire.magic else { throw RemoteFailure.protocolViolation("the helper is not locket-postgres") }
            let version = try reply.u16()
            guard version == Wire.version else {
                throw RemoteFailure.protocolViolation("the helper speaks protocol version \(version), locket \(Wire.version): install matching versions")
            }
            var connect = FrameWriter(.connect)
            connect.u16(UInt16(parameters.count))
            for (keyword, value) in parameters {
                connect.string(keyword)
                connect.string(value)
            }
            if let password {
                connect.u8(1)
                connect.field(password)
            } else {
                connect.u8(0)
            }
            defer { connect.wipe() }
            try send(connect.bytes)
            var ready = try receive()
            if ready.kind == Wire.Kind.error.rawValue {
                let (sqlstate, _, message, _) = try Self.readError(&ready)
                throw RemoteFailure.connect(sqlstate: sqlstate, message: message)
            }
            guard ready.kind == Wire.Kind.ready.rawValue else { throw try unexpected(&ready) }
            serverVersion = Int(try ready.string()) ?? 0
        } catch let failure as Wire.Failure {
            helper = nil
            if let missing = process.missingLibraries() { throw missing }
            throw RemoteFailure.helperFailure(failure)
        } catch {
            process.stop()
            helper = nil
            throw error
        }
    }

    @discardableResult
    fileprivate func run(_ sql: String, _ parameters: [RemoteValue]) throws -> [RemoteRow] {
        guard helper != nil else { throw RemoteFailure.helperGone }
        guard parameters.count <= Wire.maximumParameters else { throw KeychainError(.param, "a statement with more than \(Wire.maximumParameters) parameters") }
        var writer = FrameWriter(.execute)
        writer.string(sql)
        writer.u16(UInt16(parameters.count))
        for parameter in parameters { parameter.encode(into: &writer) }
        defer { writer.wipe() }
        guard writer.bytes.count <= Wire.maximumFrame else {
            throw KeychainError(.dataTooLarge, "a statement's values are larger than the \(ByteSize.text(Wire.maximumFrame)) limit")
        }
        do {
            try send(writer.bytes)
            var names: [String] = []
            var oids: [UInt32] = []
            var rows: [RemoteRow] = []
            while true {
                var frame = try receive()
                switch Wire.Kind(rawValue: frame.kind) {
                case .columns:
                    let count = Int(try frame.u16())
                    for _ in 0..<count {
                        names.append(try frame.string())
                        oids.append(try frame.u32())
                    }
                case .row:
                    let count = Int(try frame.u16())
                    guard count == oids.count else { throw RemoteFailure.protocolViolation("a row of \(count) values for \(oids.count) columns") }
                    var values: [RemoteValue] = []
                    for column in 0..<count {
                        values.append(try frame.u8() == 1 ? .null : try RemoteValue.decode(try frame.field(), oid: oids[column]))
                    }
                    rows.append(RemoteRow(values: values, names: names))
                case .done:
                    return rows
                case .error:
                    let (sqlstate, flags, message, constraint) = try Self.readError(&frame)
                    if flags & Wire.ErrorFlag.protocolError != 0 {
                        helper?.stop()
                        helper = nil
                        throw RemoteFailure.protocolViolation(message)
                    }
                    throw RemoteFailure.server(sqlstate: sqlstate, message: message, constraint: constraint,
                                               connectionLost: flags & Wire.ErrorFlag.connectionLost != 0)
                default:
                    throw try unexpected(&frame)
                }
            }
        } catch let failure as Wire.Failure {
            throw RemoteFailure.helperFailure(failure)
        }
    }

    private func send(_ body: [UInt8]) throws {
        guard let helper else { throw RemoteFailure.helperGone }
        try helper.channel.write(body)
    }

    private func receive() throws -> FrameReader {
        guard let helper else { throw RemoteFailure.helperGone }
        return try FrameReader(try helper.channel.read())
    }

    private static func readError(_ frame: inout FrameReader) throws -> (String, UInt8, String, String) {
        (try frame.string(), try frame.u8(), try frame.string(), try frame.string())
    }

    private func unexpected(_ frame: inout FrameReader) throws -> RemoteFailure {
        if frame.kind == Wire.Kind.error.rawValue {
            let (_, _, message, _) = try Self.readError(&frame)
            return .protocolViolation(message)
        }
        return .protocolViolation("message type \(frame.kind)")
    }

    private func wipePassword() {
        guard password != nil else { return }
        for index in password!.indices { password![index] = 0 }
        password = nil
    }
}
