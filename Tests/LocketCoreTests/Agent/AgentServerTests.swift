import Foundation
import LocketCore
import XCTest

/// The agent's server in this process, through real Unix sockets: where the
/// socket is and who may open it, framing across reads, and clients that
/// misbehave (too long, too slow, too many), none of which stops the others.
final class AgentServerTests: XCTestCase {
    private var agents: [ServedAgent] = []

    override func tearDown() {
        for agent in agents { agent.stop() }
        agents = []
        super.tearDown()
    }

    private func serve(_ source: any AgentKeySource = MemoryKeySource(), limits: AgentServer.Limits = AgentServer.Limits()) throws -> ServedAgent {
        let agent = try ServedAgent(source: source, limits: limits)
        agents.append(agent)
        return agent
    }

    private func mode(_ path: String) -> (mode: mode_t, uid: uid_t, kind: mode_t)? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return (st.st_mode & 0o7777, st.st_uid, st.st_mode & S_IFMT)
    }

    func testTheSocketIs0600InANew0700Directory() throws {
        let agent = try serve()
        let directory = try XCTUnwrap(agent.socket.directory)
        XCTAssertTrue(directory.hasPrefix(agent.directory + "/locket-agent."), directory)
        XCTAssertEqual(agent.path, directory + "/agent.\(getpid())")
        let dir = try XCTUnwrap(mode(directory)), sock = try XCTUnwrap(mode(agent.path))
        XCTAssertEqual(dir.kind, S_IFDIR)
        XCTAssertEqual(dir.mode, 0o700)
        XCTAssertEqual(dir.uid, geteuid())
        XCTAssertEqual(sock.kind, S_IFSOCK)
        XCTAssertEqual(sock.mode, 0o600)
        XCTAssertEqual(sock.uid, geteuid())
        agent.stop()
        XCTAssertNil(mode(agent.path), "the socket is left behind")
        XCTAssertNil(mode(directory), "the directory is left behind")
    }

    /// `-a PATH`: bound 0600 from the start; an existing file is never removed to make room.
    func testAGivenPathMustNotExist() throws {
        let dir = FileManager.default.temporaryDirectory.path + "/locket-agent-path-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = try AgentSocket(path: dir + "/s")
        XCTAssertEqual(mode(dir + "/s")?.mode, 0o600)
        XCTAssertNil(socket.directory)
        // Taken: refused, and the first one is untouched.
        XCTAssertThrowsError(try AgentSocket(path: dir + "/s")) { XCTAssertEqual(($0 as? KeychainError)?.code, .io) }
        XCTAssertEqual(mode(dir + "/s")?.kind, S_IFSOCK)
        socket.close()
        XCTAssertNil(mode(dir + "/s"))
        // A planted file and a planted symlink stay as they are.
        XCTAssertTrue(FileManager.default.createFile(atPath: dir + "/file", contents: Data([1])))
        symlink(dir + "/elsewhere", dir + "/link")
        for name in ["file", "link"] {
            XCTAssertThrowsError(try AgentSocket(path: dir + "/" + name), name)
        }
        XCTAssertEqual(mode(dir + "/file")?.kind, S_IFREG)
        XCTAssertEqual(mode(dir + "/link")?.kind, S_IFLNK)
        XCTAssertNil(mode(dir + "/elsewhere"), "bind followed the planted symlink")
    }

    /// A relative path is made absolute, so SSH_AUTH_SOCK works from anywhere.
    func testARelativePathIsMadeAbsolute() throws {
        let dir = FileManager.default.temporaryDirectory.path + "/locket-agent-relative-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let previous = FileManager.default.currentDirectoryPath
        XCTAssertTrue(FileManager.default.changeCurrentDirectoryPath(dir))
        defer { _ = FileManager.default.changeCurrentDirectoryPath(previous) }
        let socket = try AgentSocket(path: "rel.sock")
        XCTAssertEqual(socket.path, dir + "/rel.sock")
        XCTAssertTrue(FileManager.default.changeCurrentDirectoryPath("/"))
        socket.close()
        XCTAssertNil(mode(dir + "/rel.sock"), "closing from another directory left the socket")
    }

    /// A socket that was replaced after binding is not the agent's to remove.
    func testClosingLeavesAReplacedSocketAlone() throws {
        let dir = FileManager.default.temporaryDirectory.path + "/locket-agent-replaced-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = try AgentSocket(path: dir + "/s")
        unlink(dir + "/s")
        let other = try AgentSocket(path: dir + "/s")
        socket.close()
        XCTAssertEqual(mode(dir + "/s")?.kind, S_IFSOCK, "the other socket was removed")
        other.close()
        XCTAssertNil(mode(dir + "/s"))
    }

    func testAPathLongerThanASocketAddressIsRefused() {
        let long = "/tmp/" + String(repeating: "x", count: AgentSocket.maximumPathLength)
        XCTAssertThrowsError(try AgentSocket(path: long)) { XCTAssertEqual(($0 as? KeychainError)?.code, .param) }
        // A parent that does not exist: mkdtemp fails, nothing is made.
        XCTAssertThrowsError(try AgentSocket.makePrivate(under: "/tmp/" + String(repeating: "y", count: 100))) {
            XCTAssertEqual(($0 as? KeychainError)?.code, .io)
        }
    }

    func testRequestsAndRepliesOverTheSocket() throws {
        let agent = try serve()
        let client = try AgentClient(agent.path)
        XCTAssertEqual(client.ask(Wire.frame(11))?.type, 12)
        let key = AgentTestKeys.named("p521")
        let sign = try XCTUnwrap(client.ask(frame(Wire.signRequest(key, data: [1, 2, 3]))))
        XCTAssertEqual(sign.type, 14)
        var r = Wire.Reader(sign.contents)
        XCTAssertTrue(try key.verifySSHSignature(try r.string(), for: [1, 2, 3]))
        XCTAssertEqual(agent.events, [])
    }

    /// Messages split at every byte, and several in one write, are answered in order.
    func testFramingAcrossReads() throws {
        let agent = try serve()
        let key = AgentTestKeys.named("ed25519")
        let signFrame = try frame(Wire.signRequest(key, data: Array("abc".utf8)))
        let client = try AgentClient(agent.path)
        for byte in signFrame {
            client.send([byte])
            usleep(200)
        }
        let reply = try XCTUnwrap(client.reply())
        XCTAssertEqual(reply[4], 14)
        var r = Wire.Reader(Array(reply[5...]))
        XCTAssertTrue(try key.verifySSHSignature(try r.string(), for: Array("abc".utf8)))
        // Three at once: identities, failure, signature.
        client.send(Wire.frame(11) + Wire.frame(17, [1, 2]) + signFrame)
        XCTAssertEqual(client.reply()?[4], 12)
        XCTAssertEqual(client.reply(), [0, 0, 0, 1, 5])
        XCTAssertEqual(client.reply()?[4], 14)
        XCTAssertEqual(agent.waitForEvents(1), [.addRefused])
    }

    /// A length over 256 KiB closes that connection, and only that one.
    func testAnOversizeMessageClosesTheConnection() throws {
        let agent = try serve()
        let bystander = try AgentClient(agent.path)
        for length: UInt32 in [UInt32(AgentMessage.maximumLength + 1), 0xffff_ffff] {
            let client = try AgentClient(agent.path)
            client.send(Wire.uint32(length) + [11])
            XCTAssertTrue(client.closedByServer(), "length \(length)")
        }
        let events = agent.waitForEvents(2)
        XCTAssertEqual(events.count, 2)
        for event in events {
            guard case .dropped(let error) = event else { XCTFail("\(event)"); continue }
            XCTAssertEqual(error.code, .dataTooLarge)
        }
        XCTAssertEqual(bystander.ask(Wire.frame(11))?.type, 12)
    }

    /// The longest message allowed is read whole and answered.
    func testAMessageOfTheMaximumLengthIsAnswered() throws {
        let agent = try serve()
        let client = try AgentClient(agent.path)
        let contents = [UInt8](repeating: 0x41, count: AgentMessage.maximumLength - 1)
        XCTAssertEqual(client.ask(Wire.frame(17, contents))?.type, 5)
        XCTAssertEqual(agent.waitForEvents(1), [.addRefused])
    }

    /// A client that stops in the middle of a message is dropped after the
    /// stall limit; others are answered meanwhile: while it is still connected
    /// (no drop reported yet), not after. A 2 s limit leaves a loaded machine
    /// room for five local round trips.
    func testAStalledClientDoesNotStarveOthers() throws {
        let agent = try serve(limits: AgentServer.Limits(connections: 64, stall: 2))
        let stalled = try AgentClient(agent.path)
        stalled.send([0, 0, 0, 20, 13, 0])
        let started = Date()
        let other = try AgentClient(agent.path)
        for _ in 0..<5 { XCTAssertEqual(other.ask(Wire.frame(11))?.type, 12) }
        XCTAssertEqual(agent.events, [], "the others were answered only once the stalled client was dropped")
        XCTAssertTrue(stalled.closedByServer())
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 1.95, "dropped before the stall limit")
        guard case .dropped(let error)? = agent.waitForEvents(1).first else { return XCTFail("\(agent.events)") }
        XCTAssertTrue(error.message.contains("did not finish its message"), error.message)
        // An idle connection (between messages) is never timed out.
        let idle = try AgentClient(agent.path)
        usleep(2_300_000)
        XCTAssertEqual(idle.ask(Wire.frame(11))?.type, 12)
    }

    /// A client that sends requests but never reads the replies is dropped
    /// once its replies fill the socket and the stall limit passes.
    func testAClientThatDoesNotReadIsDropped() throws {
        let agent = try serve(limits: AgentServer.Limits(connections: 64, stall: 0.5))
        let greedy = try AgentClient(agent.path)
        _ = fcntl(greedy.fd, F_SETFL, fcntl(greedy.fd, F_GETFL) | O_NONBLOCK)
        let requests = Array((0..<2000).map { _ in Wire.frame(11) }.joined())
        let deadline = Date().addingTimeInterval(10)
        var dropped = false
        while Date() < deadline && !dropped {
            let n = requests.withUnsafeBytes { write(greedy.fd, $0.baseAddress!, $0.count) }
            if n < 0 && (errno == EPIPE || errno == ECONNRESET) { dropped = true }
            dropped = dropped || agent.events.contains { if case .dropped = $0 { return true }; return false }
            usleep(50_000)
        }
        XCTAssertTrue(dropped, "the server kept a client that never reads: \(agent.events)")
        guard case .dropped(let error)? = agent.events.first else { return XCTFail("\(agent.events)") }
        XCTAssertTrue(error.message.contains("did not read its reply"), error.message)
        XCTAssertEqual(try AgentClient(agent.path).ask(Wire.frame(11))?.type, 12)
    }

    /// A client that sends signature requests without pause gets a turn like
    /// the others: a listing asked for meanwhile is answered long before the flood is.
    func testAFloodingClientDoesNotHoldUpOthers() throws {
        let agent = try serve()
        let request = try frame(Wire.signRequest(AgentTestKeys.named("rsa2048"), data: [1], flags: 4))
        // 500 requests are ten times what a fair turn lets through before
        // the listing; the listing must come long before half of them.
        let count = 500
        let flood = Array(Array(repeating: request, count: count).joined())
        let flooder = try AgentClient(agent.path)
        let replies = DispatchSemaphore(value: 0)
        let counter = Counter()
        var answered: Int { counter.value }
        Thread.detachNewThread {
            while counter.value < count, flooder.reply() != nil { counter.increment() }
            replies.signal()
        }
        Thread.detachNewThread { flooder.send(flood) }
        // Wait until the flood is being answered, then ask for the list.
        let deadline = Date().addingTimeInterval(10)
        while answered < 20 && Date() < deadline { usleep(1000) }
        let other = try AgentClient(agent.path)
        let started = Date()
        XCTAssertEqual(other.ask(Wire.frame(11))?.type, 12)
        let waited = Date().timeIntervalSince(started)
        let answeredBefore = answered
        XCTAssertEqual(replies.wait(timeout: .now() + 120), .success)
        XCTAssertEqual(answered, count)
        XCTAssertLessThan(answeredBefore, count / 2, "the listing waited for \(answeredBefore) of \(count) signatures (\(waited) s)")
    }

    /// With every slot taken by idle clients, a newcomer is served and the
    /// connection idle the longest is closed.
    func testTheConnectionLimitMakesRoomForNewcomers() throws {
        let agent = try serve(limits: AgentServer.Limits(connections: 3, stall: 10))
        var clients: [AgentClient] = []
        for _ in 0..<3 {
            let client = try AgentClient(agent.path)
            XCTAssertEqual(client.ask(Wire.frame(11))?.type, 12)
            clients.append(client)
            usleep(20_000)
        }
        let newcomer = try AgentClient(agent.path)
        XCTAssertEqual(newcomer.ask(Wire.frame(11))?.type, 12)
        XCTAssertTrue(clients[0].closedByServer(), "the oldest idle client is still open")
        XCTAssertEqual(clients[1].ask(Wire.frame(11))?.type, 12)
        guard case .dropped(let error)? = agent.waitForEvents(1).first else { return XCTFail("\(agent.events)") }
        XCTAssertEqual(error.code, .notAvailable)
    }

    /// A locked source: the same connection gets a failure, then a signature once unlocked.
    func testLockingBetweenRequestsOnOneConnection() throws {
        let source = MemoryKeySource()
        let agent = try serve(source)
        let client = try AgentClient(agent.path)
        let request = try frame(Wire.signRequest(AgentTestKeys.named("rsa2048"), data: [5], flags: 4))
        XCTAssertEqual(client.ask(request)?.type, 14)
        source.locked = true
        XCTAssertEqual(client.ask(request)?.type, 5)
        source.locked = false
        XCTAssertEqual(client.ask(request)?.type, 14)
        XCTAssertEqual(agent.waitForEvents(1), [.signRefused(KeychainError(.interactionNotAllowed))])
    }

    /// Random bytes from many clients: the server keeps answering the well-behaved one.
    func testRandomStreamsNeverStopTheServer() throws {
        let agent = try serve(limits: AgentServer.Limits(connections: 64, stall: 0.2))
        var rng = SplitMix(seed: 0xfeed)
        for _ in 0..<40 {
            let client = try AgentClient(agent.path)
            var bytes = (0..<Int(rng.next() % 200)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if rng.next() % 2 == 0 { bytes = Wire.uint32(UInt32(rng.next() % 40)) + bytes }
            client.send(bytes)
        }
        XCTAssertEqual(try AgentClient(agent.path).ask(Wire.frame(11))?.type, 12)
        XCTAssertNil(agent.serveError)
    }

    private func frame(_ message: [UInt8]) -> [UInt8] { Wire.uint32(UInt32(message.count)) + message }
}

/// A count shared between threads.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
}
