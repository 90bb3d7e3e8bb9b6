import Foundation
import LocketWire
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// locket-postgres facing malformed, oversized, truncated and out-of-order
/// frames: one clean error frame and exit status 2, never a crash or a hang.
/// Most need no server: they fail before a connection.
final class HelperProtocolTests: XCTestCase {
    func helper() throws -> RawHelper { try RawHelper(path: try Postgres.helperPath()) }

    func assertProtocolError(_ helper: RawHelper, _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let (_, flags, message) = try helper.readError()
        XCTAssertEqual(flags & LocketWire.Wire.ErrorFlag.protocolError, LocketWire.Wire.ErrorFlag.protocolError, "\(what): \(message)", file: file, line: line)
        XCTAssertEqual(helper.closeAndWait(), 2, "\(what): exit status", file: file, line: line)
    }

    func testAnOversizedLengthIsRefusedBeforeReadingTheBody() throws {
        let helper = try helper()
        try helper.handshake()
        helper.sendRaw([0xff, 0xff, 0xff, 0xff])
        try assertProtocolError(helper, "oversized")
    }

    func testOversizeBeforeTheHandshake() throws {
        let helper = try helper()
        helper.sendRaw([0x7f, 0, 0, 0, 1])
        try assertProtocolError(helper, "oversized hello")
    }

    func testAnEmptyFrame() throws {
        let helper = try helper()
        try helper.handshake()
        helper.sendRaw([0, 0, 0, 0])
        try assertProtocolError(helper, "empty")
    }

    func testABadMagicAndAWrongVersion() throws {
        let bad = try helper()
        bad.sendRaw([0, 0, 0, 7, LocketWire.Wire.Kind.hello.rawValue] + Array("HTTP".utf8) + [0, 1])
        try assertProtocolError(bad, "magic")
        let wrong = try helper()
        var hello = FrameWriter(.hello)
        hello.raw(LocketWire.Wire.magic)
        hello.u16(LocketWire.Wire.version + 1)
        try wrong.channel.write(hello.bytes)
        // The reply names the helper's version, then the refusal.
        var reply = try FrameReader(try wrong.channel.read())
        XCTAssertEqual(reply.kind, LocketWire.Wire.Kind.helloReply.rawValue)
        _ = try reply.raw(4)
        XCTAssertEqual(try reply.u16(), LocketWire.Wire.version)
        try assertProtocolError(wrong, "version")
    }

    func testAnUnknownMessageType() throws {
        let helper = try helper()
        try helper.handshake()
        try helper.channel.write([0x7e, 1, 2, 3])
        try assertProtocolError(helper, "unknown type")
    }

    func testAFieldRunningPastItsFrame() throws {
        let helper = try helper()
        try helper.handshake()
        // execute: the SQL's length says 1000, the frame holds 3 bytes.
        try helper.channel.write([LocketWire.Wire.Kind.execute.rawValue, 0, 0, 0x03, 0xe8, 0x53, 0x45, 0x4c])
        try assertProtocolError(helper, "field past the end")
    }

    func testATruncatedFrameThenEndOfStream() throws {
        let helper = try helper()
        try helper.handshake()
        helper.sendRaw([0, 0, 1, 0, LocketWire.Wire.Kind.execute.rawValue, 1, 2])
        shutdown(helper.channel.output, Int32(SHUT_WR))
        try assertProtocolError(helper, "truncated")
    }

    func testTooManyParametersAndAnUnknownTag() throws {
        let many = try helper()
        try many.handshake()
        var frame = FrameWriter(.execute)
        frame.string("SELECT 1")
        frame.u16(UInt16(LocketWire.Wire.maximumParameters + 1))
        try many.channel.write(frame.bytes)
        try assertProtocolError(many, "too many parameters")
        let tag = try helper()
        try tag.handshake()
        var bad = FrameWriter(.execute)
        bad.string("SELECT $1")
        bad.u16(1)
        bad.u8(0x55)
        try tag.channel.write(bad.bytes)
        try assertProtocolError(tag, "unknown tag")
    }

    func testSQLWithANULOrInvalidUTF8() throws {
        for sql: [UInt8] in [Array("SELECT 1\0; DROP".utf8), [0x53, 0xff, 0xfe]] {
            let helper = try helper()
            try helper.handshake()
            var frame = FrameWriter(.execute)
            frame.field(sql)
            frame.u16(0)
            try helper.channel.write(frame.bytes)
            try assertProtocolError(helper, "sql \(sql)")
        }
    }

    func testExecuteBeforeConnectIsAnErrorNotAnExit() throws {
        let helper = try helper()
        try helper.handshake()
        var reply = try helper.execute("SELECT 1")
        XCTAssertEqual(reply.kind, LocketWire.Wire.Kind.error.rawValue)
        XCTAssertEqual(try reply.string(), "08003")
        XCTAssertEqual(helper.closeAndWait(), 0)
    }

    /// Random bytes after a good handshake: whatever they are, the helper
    /// answers with frames or exits 0 or 2, never by a signal.
    func testRandomGarbageNeverCrashesTheHelper() throws {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<40 {
            let helper = try helper()
            try helper.handshake()
            let length = Int.random(in: 1...64, using: &generator)
            var body = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Mostly well-framed garbage, so the body parser is what gets exercised.
            if round % 4 != 0 { body = [0, 0, 0, UInt8(length)] + body }
            helper.sendRaw(body)
            shutdown(helper.channel.output, Int32(SHUT_WR))
            let status = helper.closeAndWait()
            XCTAssertTrue(status == 0 || status == 2, "round \(round): exit \(status) for \(body)")
        }
    }

    /// Invalid UTF-8 sent as text is refused by the server (SQLSTATE 22021);
    /// locket's own API can't send it (RemoteValue.text is a String) and
    /// sends such bytes as bytea.
    func testInvalidUTF8AsTextIsRefusedByTheServer() throws {
        let server = try Postgres.shared()
        let helper = try helper()
        try helper.handshake()
        try helper.connect(server.socketParameters())
        var parameter = FrameWriter(.row)
        parameter.u8(LocketWire.Wire.ParameterTag.text.rawValue)
        parameter.field([0x61, 0xff, 0x00, 0x62])
        var reply = try helper.execute("SELECT $1::text", raw: Array(parameter.bytes.dropFirst()), count: 1)
        XCTAssertEqual(reply.kind, LocketWire.Wire.Kind.error.rawValue)
        XCTAssertEqual(try reply.string(), "22021")
        // The connection is still good.
        var ok = try helper.execute("SELECT 1")
        XCTAssertEqual(ok.kind, LocketWire.Wire.Kind.done.rawValue)
        XCTAssertEqual(try ok.string(), "SELECT 1")
        XCTAssertEqual(helper.closeAndWait(), 0)
    }
}
