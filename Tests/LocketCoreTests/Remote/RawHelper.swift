import Foundation
import LocketSystem
import LocketTestSupport
import LocketWire
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// locket-postgres driven frame by frame, for the protocol tests: any bytes
/// can be sent, and its exit status and signal are read back.
final class RawHelper {
    let pid: pid_t
    let channel: Channel
    private var exited: Int32?

    init(path: String) throws {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else { throw POSIXError(.EMFILE) }
        let spawned = Spawner.spawn(path, argv: [Array("locket-postgres".utf8)], environment: [],
                                    stdin: .descriptor(pair[1]), stdout: .descriptor(pair[1]), stderr: .devNull, signals: .all)
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

    /// Raw bytes onto the stream (a frame or anything else).
    func sendRaw(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(channel.output, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    func handshake(version: UInt16 = LocketWire.Wire.version) throws {
        var hello = FrameWriter(.hello)
        hello.raw(LocketWire.Wire.magic)
        hello.u16(version)
        try channel.write(hello.bytes)
        let reply = try FrameReader(try channel.read())
        XCTAssertEqual(reply.kind, LocketWire.Wire.Kind.helloReply.rawValue)
    }

    func connect(_ parameters: [(String, String)]) throws {
        var frame = FrameWriter(.connect)
        frame.u16(UInt16(parameters.count))
        for (key, value) in parameters { frame.string(key); frame.string(value) }
        frame.u8(0)
        try channel.write(frame.bytes)
        let reply = try FrameReader(try channel.read())
        XCTAssertEqual(reply.kind, LocketWire.Wire.Kind.ready.rawValue)
    }

    /// Runs `sql` and reads frames up to `done` or `error`; the last frame.
    @discardableResult
    func execute(_ sql: String, raw parameters: [UInt8] = [], count: UInt16 = 0) throws -> FrameReader {
        var frame = FrameWriter(.execute)
        frame.string(sql)
        frame.u16(count)
        frame.raw(parameters)
        try channel.write(frame.bytes)
        while true {
            let reply = try FrameReader(try channel.read())
            if reply.kind == LocketWire.Wire.Kind.done.rawValue || reply.kind == LocketWire.Wire.Kind.error.rawValue { return reply }
        }
    }

    /// The next frame, which must be an error: (sqlstate, flags, message).
    func readError() throws -> (String, UInt8, String) {
        var reply = try FrameReader(try channel.read())
        XCTAssertEqual(reply.kind, LocketWire.Wire.Kind.error.rawValue)
        return (try reply.string(), try reply.u8(), try reply.string())
    }

    /// Closes the stream and waits; the exit status, or 128+signal.
    func closeAndWait() -> Int32 {
        if let exited { return exited }
        close(channel.input)
        let result = Spawner.exitStatus(pid)
        exited = result
        return result
    }
}
