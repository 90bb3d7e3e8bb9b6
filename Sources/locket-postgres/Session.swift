import CLibPQ
import Glibc
import LocketWire

/// One libpq connection driven by the frames `locket` sends. Every statement
/// goes through PQexecParams with binary parameters and binary results: SQL
/// text comes only from locket's own statements, values only as parameters.
final class Session {
    private let channel: Channel
    private var connection: OpaquePointer?

    init(channel: Channel) { self.channel = channel }

    /// Serves frames until locket closes the stream or sends `close`; returns the exit status.
    func serve() -> Int32 {
        do throws(Wire.Failure) {
            try handshake()
            while true {
                let body = try channel.read()
                var reader = try FrameReader(body)
                switch Wire.Kind(rawValue: reader.kind) {
                case .connect: try connect(&reader)
                case .execute: try execute(&reader)
                case .close: try reader.finish(); return finish(0)
                default: throw .malformed("unexpected message type \(reader.kind)")
                }
            }
        } catch .endOfStream {
            // locket went away (killed, or done): whatever it had open is abandoned.
            return finish(0)
        } catch .system(EPIPE) {
            return finish(1)
        } catch let failure {
            // Malformed, oversized or truncated input: say so once and stop,
            // since the stream can't be resynchronised.
            try? reply(error: "", flags: Wire.ErrorFlag.protocolError, message: "protocol error: \(describe(failure))", constraint: "")
            return finish(2)
        }
    }

    private func handshake() throws(Wire.Failure) {
        var reader = try FrameReader(try channel.read())
        guard reader.kind == Wire.Kind.hello.rawValue else { throw .malformed("the first frame is not a hello") }
        let magic = try reader.raw(Wire.magic.count)
        let version = try reader.u16()
        try reader.finish()
        guard magic == Wire.magic else { throw .malformed("bad magic") }
        var writer = FrameWriter(.helloReply)
        writer.raw(Wire.magic)
        writer.u16(Wire.version)
        try channel.write(writer.bytes)
        guard version == Wire.version else { throw .malformed("locket speaks protocol version \(version), this helper \(Wire.version)") }
    }

    private func connect(_ reader: inout FrameReader) throws(Wire.Failure) {
        let count = Int(try reader.u16())
        guard count <= Wire.maximumKeywords else { throw .tooLarge }
        var keywords: [String] = [], values: [String] = []
        for _ in 0..<count {
            keywords.append(try reader.string(limit: 4096))
            values.append(try reader.string(limit: 4096))
        }
        var password: [UInt8]? = try reader.u8() == 1 ? try reader.field(limit: 4096) : nil
        try reader.finish()
        defer { if password != nil { for index in password!.indices { password![index] = 0 } } }
        guard connection == nil else { throw .malformed("already connected") }
        if let refusal = ConnectionPolicy.apply(keywords: &keywords, values: &values) {
            try reply(error: "", flags: Wire.ErrorFlag.connectFailed, message: refusal, constraint: "")
            return
        }
        if var secret = password {
            // A password with a NUL can't reach libpq intact: refuse rather than truncate.
            guard !secret.contains(0) else {
                try reply(error: "", flags: Wire.ErrorFlag.connectFailed, message: "the database password contains a NUL byte", constraint: "")
                return
            }
            secret.append(0)
            keywords.append("password")
            let connection = secret.withUnsafeBufferPointer { pointer in
                open(keywords, values, extra: UnsafeRawPointer(pointer.baseAddress!).assumingMemoryBound(to: CChar.self))
            }
            for index in secret.indices { secret[index] = 0 }
            try connected(connection)
        } else {
            try connected(open(keywords, values, extra: nil))
        }
    }

    /// PQconnectdbParams over `keywords`/`values`, plus one more value (the
    /// password) given as a pointer so that it never becomes a String.
    private func open(_ keywords: [String], _ values: [String], extra: UnsafePointer<CChar>?) -> OpaquePointer? {
        let keys = keywords.map { strdup($0) }
        let vals = values.map { strdup($0) }
        defer { (keys + vals).forEach { free($0) } }
        var keyPointers: [UnsafePointer<CChar>?] = keys.map { UnsafePointer($0) }
        var valuePointers: [UnsafePointer<CChar>?] = vals.map { UnsafePointer($0) }
        if let extra { valuePointers.append(extra) }
        keyPointers.append(nil)
        valuePointers.append(nil)
        // expand_dbname 0: a dbname is a name, never parsed as a connection string.
        return PQconnectdbParams(keyPointers, valuePointers, 0)
    }

    private func connected(_ opened: OpaquePointer?) throws(Wire.Failure) {
        guard let opened, PQstatus(opened) == CONNECTION_OK else {
            let message = opened.map { Self.oneLine(PQerrorMessage($0)) } ?? "out of memory"
            if let opened { PQfinish(opened) }
            try reply(error: "08001", flags: Wire.ErrorFlag.connectFailed, message: message, constraint: "")
            return
        }
        // Notices would go to stderr; locket's own output stays locket's.
        PQsetNoticeProcessor(opened, { _, _ in }, nil)
        // A hot standby takes the connection but no serializable transaction
        // and no write: named as such (libpq's target_session_attrs=read-write
        // skips one; a URL naming only it lands here), so locket reports the
        // keychain unavailable, as for a server that is down.
        if Self.isStandby(opened) {
            let host = PQhost(opened).map { String(cString: $0) } ?? "the server"
            let port = PQport(opened).map { String(cString: $0) } ?? ""
            let named = host.hasPrefix("/") ? "\(host) (port \(port))" : "\(host):\(port)"
            PQfinish(opened)
            try reply(error: Self.standbySQLState, flags: Wire.ErrorFlag.connectFailed,
                      message: "\(named) is a read-only standby, not the primary", constraint: "")
            return
        }
        connection = opened
        var writer = FrameWriter(.ready)
        writer.string(String(PQserverVersion(opened)))
        try channel.write(writer.bytes)
    }

    private func execute(_ reader: inout FrameReader) throws(Wire.Failure) {
        let sql = try reader.string(limit: Wire.maximumSQL)
        let count = Int(try reader.u16())
        guard count <= Wire.maximumParameters else { throw .tooLarge }
        var parameters = try Parameters(&reader, count: count)
        defer { parameters.wipe() }
        try reader.finish()
        guard let connection else {
            try reply(error: "08003", flags: Wire.ErrorFlag.connectionLost, message: "not connected", constraint: "")
            return
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            try reply(error: "08006", flags: Wire.ErrorFlag.connectionLost, message: "the connection to the server was lost", constraint: "")
            return
        }
        let result = parameters.withPointers { types, values, lengths, formats in
            PQexecParams(connection, sql, Int32(count), types, values, lengths, formats, 1)
        }
        defer { PQclear(result) }
        try send(result, connection)
    }

    private func send(_ result: OpaquePointer?, _ connection: OpaquePointer) throws(Wire.Failure) {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        guard let result, status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            var sqlstate = result.flatMap { field($0, "C") } ?? ""
            let message = result.flatMap { field($0, "M") } ?? Self.oneLine(PQerrorMessage(connection))
            // The server names every error it reports with a SQLSTATE; one
            // without (or no result at all) is libpq's own, about the socket:
            // after a write that failed with EPIPE, libpq says "server closed
            // the connection unexpectedly" and still reports CONNECTION_OK
            // (issue 44). Whatever its status says, the connection is gone.
            let lost = PQstatus(connection) != CONNECTION_OK || sqlstate.isEmpty
            if lost {
                if sqlstate.isEmpty { sqlstate = "08006" }
                // Nothing more runs on it: later statements say so at once.
                PQfinish(connection)
                self.connection = nil
            }
            try reply(error: sqlstate, flags: lost ? Wire.ErrorFlag.connectionLost : 0, message: message,
                      constraint: result.flatMap { field($0, "n") } ?? "")
            return
        }
        let columns = PQnfields(result)
        var header = FrameWriter(.columns)
        header.u16(UInt16(columns))
        for column in 0..<columns {
            header.string(PQfname(result, column).map { String(cString: $0) } ?? "")
            header.u32(PQftype(result, column))
        }
        try channel.write(header.bytes)
        for row in 0..<PQntuples(result) {
            var writer = FrameWriter(.row)
            writer.u16(UInt16(columns))
            for column in 0..<columns {
                if PQgetisnull(result, row, column) == 1 {
                    writer.u8(1)
                } else {
                    writer.u8(0)
                    let length = Int(PQgetlength(result, row, column))
                    let value = UnsafeRawBufferPointer(start: PQgetvalue(result, row, column), count: length)
                    writer.field(value)
                }
            }
            guard writer.bytes.count <= Wire.maximumFrame else {
                try reply(error: "54000", flags: 0, message: "a row is larger than the protocol allows", constraint: "")
                return
            }
            try channel.write(writer.bytes)
            writer.wipe()
        }
        var done = FrameWriter(.done)
        done.string(PQcmdStatus(result).map { String(cString: $0) } ?? "")
        done.u64(UInt64(PQcmdTuples(result).flatMap { UInt64(String(cString: $0)) } ?? 0))
        try channel.write(done.bytes)
    }

    /// What a standby refusal carries: read_only_sql_transaction.
    static let standbySQLState = "25006"

    /// Whether the server is in recovery: the `in_hot_standby` parameter
    /// servers from 14 on report at connection, else one query.
    private static func isStandby(_ connection: OpaquePointer) -> Bool {
        if let reported = PQparameterStatus(connection, "in_hot_standby") { return String(cString: reported) == "on" }
        guard let result = PQexec(connection, "SELECT pg_is_in_recovery()") else { return false }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_TUPLES_OK, PQntuples(result) == 1, let value = PQgetvalue(result, 0, 0) else { return false }
        return value.pointee == CChar(UInt8(ascii: "t"))
    }

    private func field(_ result: OpaquePointer, _ code: Character) -> String? {
        PQresultErrorField(result, Int32(code.asciiValue!)).map { Self.oneLine($0) }
    }

    private func reply(error sqlstate: String, flags: UInt8, message: String, constraint: String) throws(Wire.Failure) {
        var writer = FrameWriter(.error)
        writer.string(sqlstate)
        writer.u8(flags)
        writer.string(message)
        writer.string(constraint)
        try channel.write(writer.bytes)
    }

    /// Rolls back what is open and disconnects. Closing the connection alone
    /// would abort the transaction too; the explicit ROLLBACK makes it prompt.
    private func finish(_ status: Int32) -> Int32 {
        if let connection {
            if PQstatus(connection) == CONNECTION_OK && PQtransactionStatus(connection) != PQTRANS_IDLE {
                PQclear(PQexec(connection, "ROLLBACK"))
            }
            PQfinish(connection)
            self.connection = nil
        }
        return status
    }

    private func describe(_ failure: Wire.Failure) -> String {
        switch failure {
        case .endOfStream: "end of stream"
        case .truncated: "the stream ended inside a frame"
        case .tooLarge: "a frame or field over the size limit"
        case .malformed(let why): why
        case .system(let code): "system error \(code)"
        }
    }

    /// A C message as one printable line of at most 300 characters.
    static func oneLine(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "" }
        let line = String(decoding: UnsafeRawBufferPointer(start: text, count: strlen(text)), as: UTF8.self)
            .split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        let printable = line.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? "?" : String($0) }.joined()
        return String(printable.prefix(300))
    }
}
