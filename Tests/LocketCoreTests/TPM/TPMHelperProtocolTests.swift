import Foundation
import LocketCore
import LocketSystem
import LocketWire
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// locket-tpm driven frame by frame: its input is hostile (SPEC §21). A
/// malformed, oversized or out-of-order frame gets one error frame and exit
/// status 2; a request the TPM can't take gets an error frame and the helper
/// serves on; nothing it holds is ever printed.
final class TPMHelperProtocolTests: TPMTestCase {
    /// The helper with its stderr in a file of the fixture.
    final class Raw {
        let pid: pid_t
        let channel: Channel
        let stderrPath: String
        private var exited: Int32?

        init(path: String, stderr stderrPath: String) throws {
            self.stderrPath = stderrPath
            var pair: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else { throw POSIXError(.EMFILE) }
            let log = open(stderrPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            defer { close(log) }
            let spawned = Spawner.spawn(path, argv: [Array("locket-tpm".utf8)], environment: [],
                                        stdin: .descriptor(pair[1]), stdout: .descriptor(pair[1]), stderr: .descriptor(log), signals: .all)
            close(pair[1])
            pid = try spawned.get()
            channel = Channel(input: pair[0], output: pair[0])
            // A test must never hang on a helper that stopped answering.
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(pair[0], SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit {
            if exited == nil { kill(pid, SIGKILL); _ = closeAndWait() }
        }

        func sendRaw(_ bytes: [UInt8]) {
            _ = bytes.withUnsafeBytes { Glibc.send(channel.output, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        func send(_ writer: FrameWriter) throws { try channel.write(writer.bytes, limit: TPMWire.maximumFrame) }

        func receive() throws -> FrameReader { try FrameReader(try channel.read(limit: TPMWire.maximumFrame)) }

        func handshake(version: UInt16 = TPMWire.version) throws {
            var hello = FrameWriter(tpm: .hello)
            hello.raw(TPMWire.magic)
            hello.u16(version)
            try send(hello)
            XCTAssertEqual(try receive().kind, TPMWire.Kind.helloReply.rawValue)
        }

        /// The next frame, which must be an error: (failure, message).
        func readError() throws -> (TPMWire.Failure?, String) {
            var reply = try receive()
            XCTAssertEqual(reply.kind, TPMWire.Kind.error.rawValue)
            let failure = TPMWire.Failure(rawValue: try reply.u8())
            _ = try reply.u8()
            _ = try reply.u32()
            return (failure, try reply.string(limit: 1024))
        }

        func closeAndWait() -> Int32 {
            if let exited { return exited }
            close(channel.input)
            let result = Spawner.exitStatus(pid)
            exited = result
            return result
        }
    }

    func raw() throws -> Raw { try Raw(path: try helperPath(), stderr: fixture.dir + "/stderr-\(UUID().uuidString)") }

    func assertProtocolError(_ helper: Raw, _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let (failure, message) = try helper.readError()
        XCTAssertEqual(failure, .protocolError, "\(what): \(message)", file: file, line: line)
        XCTAssertEqual(helper.closeAndWait(), 2, "\(what): exit status", file: file, line: line)
    }

    func testTheHandshakeRefusesAnotherProtocolOrVersion() throws {
        let postgres = try raw()
        var hello = FrameWriter(.hello)
        hello.raw(LocketWire.Wire.magic)
        hello.u16(LocketWire.Wire.version)
        try postgres.channel.write(hello.bytes)
        try assertProtocolError(postgres, "the PostgreSQL helper's magic")
        let later = try raw()
        var newer = FrameWriter(tpm: .hello)
        newer.raw(TPMWire.magic)
        newer.u16(TPMWire.version + 1)
        try later.send(newer)
        var reply = try later.receive()
        XCTAssertEqual(reply.kind, TPMWire.Kind.helloReply.rawValue)
        _ = try reply.raw(4)
        XCTAssertEqual(try reply.u16(), TPMWire.version)
        try assertProtocolError(later, "version")
    }

    func testMalformedFramesEndTheHelperCleanly() throws {
        func authorization(_ bytes: [UInt8]) -> [UInt8] { [1, 0, 0, 0, UInt8(bytes.count)] + bytes }
        let field: ([UInt8]) -> [UInt8] = { [0, 0, UInt8($0.count >> 8), UInt8($0.count & 0xff)] + $0 }
        let blob = field([0, 1, 0]) + field([0, 1, 0])
        let cases: [(String, [UInt8])] = [
            ("oversized", [0x00, 0x01, 0x00, 0x00]),
            ("an empty frame", [0, 0, 0, 0]),
            ("an unknown message", [0, 0, 0, 1, 0x7e]),
            ("a reply type sent as a request", [0, 0, 0, 1, TPMWire.Kind.secret.rawValue]),
            ("trailing bytes", [0, 0, 0, 2, TPMWire.Kind.probe.rawValue, 0]),
            ("an authorization flag of 2", [0, 0, 0, 2, TPMWire.Kind.createKey.rawValue, 2]),
            ("a 33-byte authorization value", frame(.createKey, authorization([UInt8](repeating: 7, count: 33)))),
            ("an empty authorization value", frame(.createKey, authorization([]))),
            ("a 31-byte digest", frame(.sign, blob + [0] + field([UInt8](repeating: 1, count: 31)))),
            ("an empty blob", frame(.sign, field([]) + field([]) + [0] + field([UInt8](repeating: 1, count: 32)))),
            ("a blob over 4 KiB", frame(.sign, field([UInt8](repeating: 0, count: 4097)) + field([0]) + [0] + field([UInt8](repeating: 1, count: 32)))),
            ("a point of 33 bytes", frame(.ecdh, blob + [0] + field([UInt8](repeating: 1, count: 33)) + field([UInt8](repeating: 1, count: 32)))),
            ("PCR 24", frame(.seal, field([1]) + [0] + [0x01, 0x00, 0x00, 0x00])),
            ("an empty secret", frame(.seal, field([]) + [0] + [0, 0, 0, 0])),
            ("a 129-byte secret", frame(.seal, field([UInt8](repeating: 1, count: 129)) + [0] + [0, 0, 0, 0])),
            ("a field running past its frame", [0, 0, 0, 5, TPMWire.Kind.open.rawValue, 0, 0, 0, 9]),
            ("a TCTI that is not UTF-8", frame(.open, field([0xc3, 0x28]))),
            ("the stream ending inside a frame", [0, 0, 0, 9, TPMWire.Kind.probe.rawValue]),
        ]
        for (what, bytes) in cases {
            let helper = try raw()
            try helper.handshake()
            helper.sendRaw(bytes)
            if what == "the stream ending inside a frame" {
                shutdown(helper.channel.output, Int32(SHUT_WR))
                let (failure, _) = try helper.readError()
                XCTAssertEqual(failure, .protocolError, what)
                XCTAssertEqual(helper.closeAndWait(), 2, what)
                continue
            }
            try assertProtocolError(helper, what)
        }
    }

    /// Requests the helper can't serve (nothing open, a TCTI that is not a
    /// TPM's) are answered, and it serves on.
    func testRefusalsLeaveTheHelperServing() throws {
        let helper = try raw()
        try helper.handshake()
        try helper.send(FrameWriter(tpm: .probe))
        XCTAssertEqual(try helper.readError().0, .badRequest)
        for tcti in ["cmd:/bin/sh -c 'touch /tmp/owned'", "/tmp/libevil.so", "swtpm:port=1\u{1b}[2J"] {
            var open = FrameWriter(tpm: .open)
            open.string(tcti)
            try helper.send(open)
            let (failure, message) = try helper.readError()
            XCTAssertEqual(failure, .unavailable, tcti)
            XCTAssertFalse(message.contains("\u{1b}"), message)
        }
        let tpm = try sharedTPM()
        var open = FrameWriter(tpm: .open)
        open.string(tpm.tcti)
        try helper.send(open)
        XCTAssertEqual(try helper.receive().kind, TPMWire.Kind.opened.rawValue)
        try helper.send(FrameWriter(tpm: .close))
        XCTAssertEqual(helper.closeAndWait(), 0)
    }

    /// Blobs that are not what they say: the TPM layer refuses them as a
    /// bad request, the helper answers the next request, and prints nothing
    /// of the secrets it handled.
    func testHostileBlobsAreRefusedAndNothingIsPrinted() throws {
        let tpm = try sharedTPM()
        let helper = try raw()
        try helper.handshake()
        var open = FrameWriter(tpm: .open)
        open.string(tpm.tcti)
        try helper.send(open)
        XCTAssertEqual(try helper.receive().kind, TPMWire.Kind.opened.rawValue)
        // A real key with its application password, to have secrets pass through.
        var create = FrameWriter(tpm: .createKey)
        create.u8(1)
        create.field(Array("hunter2-application".utf8))
        try helper.send(create)
        var made = try helper.receive()
        XCTAssertEqual(made.kind, TPMWire.Kind.object.rawValue)
        let publicArea = try made.field(), privateArea = try made.field()
        let digest = [UInt8](repeating: 0x5a, count: 32)
        let hostile: [(String, [UInt8], [UInt8])] = [
            ("random bytes", [0, 4, 1, 2, 3, 4], [0, 4, 1, 2, 3, 4]),
            ("a size that lies", [0, 0xff] + Array(publicArea.dropFirst(2)), privateArea),
            // Its integrity check fails: the TPM can't tell it from another TPM's.
            ("the private part cut short", publicArea, [privateArea[0], privateArea[1] - 1] + Array(privateArea[2..<(privateArea.count - 1)])),
            ("a sealed object's public part for a key", Array(publicArea[0..<2]) + [0x00, 0x08] + Array(publicArea[4...]), privateArea),
        ]
        for (what, pub, priv) in hostile {
            var sign = FrameWriter(tpm: .sign)
            sign.field(pub)
            sign.field(priv)
            sign.u8(1)
            sign.field(Array("hunter2-application".utf8))
            sign.field(digest)
            try helper.send(sign)
            let (failure, message) = try helper.readError()
            XCTAssertTrue([.badRequest, .tpm, .otherTPM].contains(failure), "\(what): \(String(describing: failure)) \(message)")
        }
        var wrong = FrameWriter(tpm: .sign)
        wrong.field(publicArea)
        wrong.field(privateArea)
        wrong.u8(1)
        wrong.field(Array("hunter3-guessed".utf8))
        wrong.field(digest)
        try helper.send(wrong)
        XCTAssertEqual(try helper.readError().0, .authorization)
        var seal = FrameWriter(tpm: .seal)
        seal.field(Array("the-sealed-device-secret".utf8))
        seal.u8(0)
        seal.u32(0)
        try helper.send(seal)
        XCTAssertEqual(try helper.receive().kind, TPMWire.Kind.object.rawValue)
        try helper.send(FrameWriter(tpm: .lockout))
        XCTAssertEqual(try helper.receive().kind, TPMWire.Kind.lockoutStatus.rawValue)
        try helper.send(FrameWriter(tpm: .close))
        XCTAssertEqual(helper.closeAndWait(), 0)
        // tpm2-tss logs to stderr unless told not to; locket-tpm says nothing there.
        XCTAssertEqual(try String(contentsOfFile: helper.stderrPath, encoding: .utf8), "")
    }

    func frame(_ kind: TPMWire.Kind, _ body: [UInt8]) -> [UInt8] {
        let count = body.count + 1
        return [UInt8(count >> 24), UInt8((count >> 16) & 0xff), UInt8((count >> 8) & 0xff), UInt8(count & 0xff), kind.rawValue] + body
    }
}
