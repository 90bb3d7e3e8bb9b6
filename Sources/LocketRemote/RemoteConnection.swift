import LocketCore
import Glibc
import LocketSupport
import LocketWire

/// A connection to a PostgreSQL server through the `locket-postgres` helper
/// (SPEC §17, docs/REMOTE.md): locket's own SQL, values as binary parameters,
/// transactions retried on serialization failures. Nothing here runs for a
/// file keychain: the helper starts only when a remote keychain is opened.
public final class RemoteConnection {
    private let helperPath: String
    private let parameters: [(String, String)]
    private var password: [UInt8]?
    private let environment: Environment
    private var helper: HelperProcess?
    /// Set while a `transaction` body runs (RemoteConnection+Transaction.swift).
    var inTransaction = false
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
            if failure.connectionLost { disconnect() }
            throw failure.keychainError
        }
    }

    /// Whether a helper runs (none after a lost connection, until the next statement connects).
    var isConnected: Bool { helper != nil }

    /// Forgets a connection that was lost: its helper stopped, the next statement connects again.
    func disconnect() {
        helper?.stop()
        helper = nil
    }

    func connect() throws {
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
    func run(_ sql: String, _ parameters: [RemoteValue]) throws -> [RemoteRow] {
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
