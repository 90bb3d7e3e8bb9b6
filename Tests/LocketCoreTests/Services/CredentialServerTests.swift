import Foundation
import LocketCore
import LocketTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 44, point 11: the credential socket served one connection at a
/// time, so a unit that read its credential slowly (or never) held every
/// other unit's up for as long as it liked. Now no peer waits for another,
/// and each connection has a deadline for its whole exchange.
final class CredentialServerTests: XCTestCase {
    private var directory: String!
    private var server: CredentialServer!
    private var thread: Thread?
    private var stopPipe: [Int32] = [-1, -1]
    private let events = EventLog()
    private let served = DispatchSemaphore(value: 0)
    static let large = 1 << 20

    override func setUpWithError() throws {
        var template = Array((NSTemporaryDirectory() + "/locket-credential-XXXXXX").utf8CString)
        directory = try XCTUnwrap(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        XCTAssertEqual(pipe(&stopPipe), 0)
    }

    override func tearDown() {
        if stopPipe[1] >= 0 { _ = write(stopPipe[1], "x", 1) }
        if thread != nil { _ = served.wait(timeout: .now() + 10) }
        server = nil
        for fd in stopPipe where fd >= 0 { close(fd) }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts a server whose credential `big` is 1 MiB and every other ID is its own name.
    private func start(deadline: Double) throws -> String {
        let socket = try CredentialSocket(path: directory + "/credentials.sock")
        let events = self.events
        nonisolated(unsafe) let server = CredentialServer(socket: socket, deadline: deadline, answer: { request in
            let bytes = request.credential == "big" ? [UInt8](repeating: 0x61, count: Self.large) : Array(request.credential.utf8)
            return try SecureBytes(copying: bytes)
        }, report: { events.add($0) })
        self.server = server
        let stop = stopPipe[0]
        let served = self.served
        thread = Thread {
            try? server.serve(watching: [stop]) { _ in true }
            served.signal()
        }
        thread!.start()
        return socket.path
    }

    func testASlowReaderDelaysNoOtherUnitAndIsCutOffAtItsDeadline() throws {
        let path = try start(deadline: 1.5)
        // One peer that never reads, one that reads 32 KiB every 100 ms (3.2 s for the whole):
        // both hold a 1 MiB credential that does not fit the socket's buffer.
        let stalled = try SystemdCredentialClient.connect(path, unit: "stalled.service", id: "big", receiveBuffer: 4096)
        defer { close(stalled) }
        let slow = try SystemdCredentialClient.connect(path, unit: "slow.service", id: "big", receiveBuffer: 4096)
        let slowReader = SlowReader(fd: slow, chunk: 32 * 1024, pause: 0.1)
        // Meanwhile other units get theirs, all of them before either slow peer's deadline.
        let units = try (0..<5).map { try SystemdCredentialClient.connect(path, unit: "unit\($0).service", id: "token-\($0)") }
        for (k, fd) in units.enumerated() {
            XCTAssertEqual(try SystemdCredentialClient.readToEnd(fd, timeout: 1.4), Array("token-\(k)".utf8), "unit \(k) waited for a slow peer")
        }
        XCTAssertFalse(events.lines.contains { $0.hasPrefix("refused") }, "the other units were answered only after a slow peer was cut off: \(events.lines)")
        // The slow reader is cut off at its deadline, with part of it only.
        let (read, ended) = slowReader.finish(timeout: 10)
        XCTAssertLessThan(read, Self.large, "the slow reader was not cut off")
        XCTAssertGreaterThan(ended, 1.2, "cut off before its deadline")
        XCTAssertLessThan(ended, 4, "not cut off at its deadline")
        XCTAssertTrue(events.waitUntil(timeout: 5) { $0.filter(\.isRefused).count == 2 }, "\(events.lines)")
        let lines = events.lines
        XCTAssertEqual(lines.filter { $0.hasPrefix("gave token-") }.count, 5, "\(lines)")
        for unit in ["stalled.service", "slow.service"] {
            XCTAssertTrue(lines.contains { $0.hasPrefix("refused big to \(unit): the peer had not read the credential after 1.5 s") && $0.contains("errSecIO") },
                          "\(lines)")
        }
    }

    func testACredentialTooLargeForSystemdIsRefusedNamingTheLimit() throws {
        let socket = try CredentialSocket(path: directory + "/credentials.sock")
        let events = self.events
        server = CredentialServer(socket: socket, answer: { _ in try SecureBytes(count: (1 << 20) + 1) }, report: { events.add($0) })
        let stop = stopPipe[0]
        let served = self.served
        nonisolated(unsafe) let server = self.server!
        thread = Thread {
            try? server.serve(watching: [stop]) { _ in true }
            served.signal()
        }
        thread!.start()
        XCTAssertEqual(try SystemdCredentialClient.load(socket.path, unit: "a.service", id: "x"), [])
        XCTAssertTrue(events.waitUntil(timeout: 5) { !$0.isEmpty })
        XCTAssertEqual(events.lines, ["refused x to a.service: the secret is 1048577 bytes, more than the 1 MiB systemd takes for a credential (errSecDataTooLarge -25302)"])
    }
}

/// Reads `chunk` bytes every `pause` seconds on a thread of its own, to the end.
private final class SlowReader: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var total = 0
    private var seconds = 0.0

    init(fd: Int32, chunk: Int, pause: Double) {
        let started = Date()
        Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: chunk)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                total += n
                usleep(UInt32(pause * 1_000_000))
            }
            seconds = Date().timeIntervalSince(started)
            close(fd)
            done.signal()
        }.start()
    }

    /// The bytes read and the seconds until the end of the stream.
    func finish(timeout: Double) -> (Int, Double) {
        guard done.wait(timeout: .now() + timeout) == .success else { return (-1, .infinity) }
        return (total, seconds)
    }
}

/// The server's events, as the command's log lines words them.
private final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [CredentialServer.Event] = []

    func add(_ event: CredentialServer.Event) { lock.withLock { events.append(event) } }

    var lines: [String] {
        lock.withLock { events }.map { event in
            switch event {
            case .gave(let request, let bytes): "gave \(request.credential) to \(request.unit) (\(bytes) bytes)"
            case .refused(let request, let error): "refused \(request.credential) to \(request.unit): \(error.description)"
            case .peerRefused(let uid): "peer \(uid)"
            case .unnamed(let uid, let address): "unnamed \(uid) \(address)"
            case .dropped(let error): "dropped \(error.description)"
            }
        }
    }

    func waitUntil(timeout: Double, _ condition: ([CredentialServer.Event]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(lock.withLock { events }) { return true }
            usleep(20_000)
        }
        return condition(lock.withLock { events })
    }
}

private extension CredentialServer.Event {
    var isRefused: Bool {
        if case .refused = self { return true }
        return false
    }
}
