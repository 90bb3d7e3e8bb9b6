import Foundation
import LocketCore
import XCTest

// Support for the agent's engine and server tests: keys made once per run,
// a key source in memory whose lock the test turns, agent messages built and
// read by hand (not with the code under test), and a server on a thread.

/// One key of each type SSH agents serve, made once a process; the RSA
/// key once a run (`TestKeys`: a prime search takes a while).
enum AgentTestKeys {
    static let all: [(name: String, key: AsymmetricKey)] = {
        [("ed25519", .ed25519), ("p256", .p256), ("p384", .p384), ("p521", .p521)].map { name, type in
            (name, try! AsymmetricKey.generate(type))
        } + [("rsa2048", try! AsymmetricKey.runKey("rsa2048"))]
    }()

    static func named(_ name: String) -> AsymmetricKey { all.first { $0.name == name }!.key }
}

/// Keys in memory; `locked` and `hidden` are read on every request, as the
/// keychain's source opens the keychain on every request.
final class MemoryKeySource: AgentKeySource, @unchecked Sendable {
    private let lock = NSLock()
    private var _locked = false
    private var _hidden = false
    private(set) var keys: [(name: String, key: AsymmetricKey)]
    /// How many times each method was called.
    private(set) var listings = 0
    private(set) var signings = 0

    init(_ keys: [(name: String, key: AsymmetricKey)] = AgentTestKeys.all) { self.keys = keys }

    var locked: Bool {
        get { lock.withLock { _locked } }
        set { lock.withLock { _locked = newValue } }
    }

    var hidden: Bool {
        get { lock.withLock { _hidden } }
        set { lock.withLock { _hidden = newValue } }
    }

    func identities() throws -> [AgentIdentity] {
        lock.withLock { listings += 1 }
        if hidden { throw KeychainError(.interactionNotAllowed) }
        return try keys.map { AgentIdentity(publicKeyBlob: try $0.key.sshPublicKeyBlob(), comment: $0.name) }
    }

    func withPrivateKey<R>(publicKeyBlob: [UInt8], _ body: (any PrivateKeyOperations) throws -> R) throws -> R {
        lock.withLock { signings += 1 }
        if locked { throw KeychainError(.interactionNotAllowed) }
        guard let match = try keys.first(where: { try $0.key.sshPublicKeyBlob() == publicKeyBlob }) else { throw KeychainError(.itemNotFound) }
        return try body(match.key)
    }
}

/// A source that answers every signature with a key other than the one asked for.
struct WrongKeySource: AgentKeySource {
    func identities() throws -> [AgentIdentity] { [] }
    func withPrivateKey<R>(publicKeyBlob: [UInt8], _ body: (any PrivateKeyOperations) throws -> R) throws -> R {
        try body(AgentTestKeys.named("p256"))
    }
}

/// Agent messages written and read by hand, independently of the code under test.
enum Wire {
    static func uint32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
    static func string(_ b: [UInt8]) -> [UInt8] { uint32(UInt32(b.count)) + b }
    static func string(_ s: String) -> [UInt8] { string(Array(s.utf8)) }

    /// A message's number and contents (what `AgentEngine.respond` takes).
    static func message(_ type: UInt8, _ contents: [UInt8] = []) -> [UInt8] { [type] + contents }
    /// The same with its length, as on the socket.
    static func frame(_ type: UInt8, _ contents: [UInt8] = []) -> [UInt8] { uint32(UInt32(contents.count + 1)) + message(type, contents) }

    static func signRequest(_ key: AsymmetricKey, data: [UInt8], flags: UInt32 = 0) throws -> [UInt8] {
        message(13, string(try key.sshPublicKeyBlob()) + string(data) + uint32(flags))
    }

    /// Reads SSH wire values from a reply.
    struct Reader {
        let bytes: [UInt8]
        var offset = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        var atEnd: Bool { offset == bytes.count }
        mutating func byte() throws -> UInt8 {
            guard offset < bytes.count else { throw KeychainError(.decode) }
            offset += 1
            return bytes[offset - 1]
        }
        mutating func uint32() throws -> UInt32 {
            guard offset + 4 <= bytes.count else { throw KeychainError(.decode) }
            defer { offset += 4 }
            return bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
        }
        mutating func string() throws -> [UInt8] {
            let n = Int(try uint32())
            guard offset + n <= bytes.count else { throw KeychainError(.decode) }
            defer { offset += n }
            return Array(bytes[offset..<(offset + n)])
        }
    }

    /// The message number and contents of a framed reply, checking its length.
    static func unframe(_ reply: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> (type: UInt8, contents: [UInt8]) {
        var r = Reader(reply)
        let length = Int(try r.uint32())
        XCTAssertEqual(length, reply.count - 4, "the frame's length is not its size", file: file, line: line)
        let type = try r.byte()
        return (type, Array(reply[5...]))
    }
}

/// A connected client socket with a receive timeout.
final class AgentClient: @unchecked Sendable {
    let fd: Int32

    init(_ path: String) throws {
        // A write to a connection the server closed must fail, not kill the test runner.
        signal(SIGPIPE, SIG_IGN)
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8)
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Exactly `n` bytes, or nil at end of stream, error or timeout.
    func read(_ n: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: n)
        var got = 0
        while got < n {
            let r = out.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + got, n - got) }
            if r <= 0 { return nil }
            got += r
        }
        return out
    }

    /// One framed reply, or nil when the connection closed (or 10 s passed).
    func reply() -> [UInt8]? {
        guard let head = read(4) else { return nil }
        let length = Int(head[0]) << 24 | Int(head[1]) << 16 | Int(head[2]) << 8 | Int(head[3])
        guard let body = read(length) else { return nil }
        return head + body
    }

    /// Whether the server closed the connection (end of stream) within 10 s.
    func closedByServer() -> Bool {
        var byte: UInt8 = 0
        return Glibc.read(fd, &byte, 1) == 0
    }

    /// One request, one reply: its number and contents.
    func ask(_ frame: [UInt8]) -> (type: UInt8, contents: [UInt8])? {
        send(frame)
        guard let reply = reply() else { return nil }
        return (reply[4], Array(reply[5...]))
    }
}

/// An AgentServer serving on a thread of the test process, stopped (and its
/// socket removed) by `stop()`; the events it reported, in order.
final class ServedAgent {
    let socket: AgentSocket
    let directory: String
    private let stopPipe: [Int32]
    private let lock = NSLock()
    private var _events: [AgentEvent] = []
    private let done = DispatchSemaphore(value: 0)
    private var stopped = false
    private(set) var serveError: Error?

    var path: String { socket.path }
    var events: [AgentEvent] { lock.withLock { _events } }

    init(source: any AgentKeySource, limits: AgentServer.Limits = AgentServer.Limits()) throws {
        var template = Array("/tmp/locket-agent-test.XXXXXX".utf8CString)
        directory = String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!)! })
        socket = try AgentSocket.makePrivate(under: directory)
        var fds: [Int32] = [-1, -1]
        pipe(&fds)
        stopPipe = fds
        nonisolated(unsafe) let source = source
        nonisolated(unsafe) let server = AgentServer(socket: socket, source: source, limits: limits) { [weak self] event in
            guard let self else { return }
            self.lock.withLock { self._events.append(event) }
        }
        let stopFD = fds[0]
        nonisolated(unsafe) let unsafeSelf = self
        Thread.detachNewThread {
            do {
                try server.serve(watching: [stopFD]) { _ in true }
            } catch {
                unsafeSelf.serveError = error
            }
            unsafeSelf.done.signal()
        }
    }

    /// Stops the server, removes the socket; idempotent.
    func stop() {
        guard !stopped else { return }
        stopped = true
        var byte: UInt8 = 1
        write(stopPipe[1], &byte, 1)
        _ = done.wait(timeout: .now() + 20)
        socket.close()
        close(stopPipe[0]); close(stopPipe[1])
        rmdir(directory)
    }

    deinit { stop() }

    /// Waits up to `seconds` for `count` events.
    func waitForEvents(_ count: Int, seconds: Double = 10) -> [AgentEvent] {
        let deadline = Date().addingTimeInterval(seconds)
        while events.count < count && Date() < deadline { usleep(10_000) }
        return events
    }
}
