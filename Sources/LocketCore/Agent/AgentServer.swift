import Glibc
import LocketSupport

/// Serves the SSH agent protocol on an `AgentSocket`: one thread, poll(2),
/// every client at once. A connection from another uid is closed before a
/// byte is read (SO_PEERCRED, checked against geteuid; unlike OpenSSH's
/// agent, root is another uid too). A client can't hold the
/// agent up: one that stalls in the middle of a message or stops reading its
/// reply is dropped after `Limits.stall`, and when `Limits.connections` are
/// open the longest-idle one makes room for a newcomer.
public final class AgentServer {
    /// How much one client may take.
    public struct Limits: Sendable {
        /// Connections open at once.
        public var connections: Int
        /// Seconds a client may take to send the rest of a message or to read a reply.
        public var stall: Double

        public init(connections: Int = 64, stall: Double = 10) {
            self.connections = connections
            self.stall = stall
        }
    }

    private let socket: AgentSocket
    private let engine: AgentEngine
    private let limits: Limits
    private let report: (AgentEvent) -> Void
    private var clients: [AgentConnection] = []

    /// A server for `socket` answering from `source`; `report` hears of every refusal.
    public init(socket: AgentSocket, source: any AgentKeySource, limits: Limits = Limits(), report: @escaping (AgentEvent) -> Void) {
        self.socket = socket
        self.engine = AgentEngine(source: source)
        self.limits = limits
        self.report = report
    }

    /// Serves until `stop` returns true. `stop` is called with each of
    /// `watching` (a signalfd, a pipe) that becomes readable. Open
    /// connections are closed on return; the socket is the caller's to close.
    public func serve(watching: [Int32], stop: (Int32) -> Bool) throws {
        defer {
            for client in clients { client.close() }
            clients = []
        }
        while true {
            let now = Self.monotonicNow()
            dropStalled(now: now)
            let accepting = clients.count < limits.connections || clients.contains { $0.isIdle }
            var fds = watching.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            fds.append(pollfd(fd: accepting ? socket.descriptor : -1, events: Int16(POLLIN), revents: 0))
            for client in clients {
                fds.append(pollfd(fd: client.fd, events: Int16(client.hasOutput ? POLLOUT : POLLIN), revents: 0))
            }
            // Messages already read and waiting their turn: look again at once.
            let waiting = clients.contains { !$0.hasOutput && $0.hasWholeMessage }
            let wait = waiting ? 0 : timeout(now: now)
            let n = try valueOrErrno("poll") { poll(&fds, nfds_t(fds.count), wait) }
                .get { KeychainError(.io, "the agent could not wait for clients: \($0)") }
            if n == 0 && !waiting { continue }
            for k in watching.indices where fds[k].revents != 0 {
                if stop(fds[k].fd) { return }
            }
            let after = Self.monotonicNow()
            // Clients first, by their place in the poll set; then newcomers.
            var closing: [Int] = []
            for (k, client) in clients.enumerated() {
                let revents = Int32(fds[watching.count + 1 + k].revents)
                let outcome: AgentConnection.Outcome
                if client.hasOutput {
                    guard revents != 0 else { continue }
                    outcome = revents & Int32(POLLOUT) != 0 ? client.send(engine, now: after, report: report) : .closed
                } else {
                    guard revents != 0 || client.hasWholeMessage else { continue }
                    outcome = client.receive(engine, readable: revents != 0, now: after, report: report)
                }
                switch outcome {
                case .open: break
                case .closed: closing.append(k)
                case .dropped(let error):
                    report(.dropped(error))
                    closing.append(k)
                }
            }
            for k in closing.reversed() { clients.remove(at: k).close() }
            if fds[watching.count].revents != 0 { acceptAll(now: after) }
        }
    }

    private func acceptAll(now: Double) {
        while true {
            let fd: Int32, uid: UInt32
            switch socket.listening.accept() {
            case .none, .failed: return
            case .unidentified(let failure):
                report(.dropped(KeychainError(.io, "cannot tell who connected: \(failure)")))
                continue
            case .connection(let accepted, let peer): (fd, uid) = (accepted, peer)
            }
            guard uid == geteuid() else {
                report(.peerRefused(uid: uid))
                close(fd)
                continue
            }
            if clients.count >= limits.connections {
                // Room for the newcomer: the connection idle the longest goes.
                guard let oldest = clients.indices.filter({ clients[$0].isIdle }).min(by: { clients[$0].lastActive < clients[$1].lastActive }) else {
                    close(fd)
                    return
                }
                clients.remove(at: oldest).close()
                report(.dropped(KeychainError(.notAvailable, "\(limits.connections) clients were connected; the one idle the longest was closed")))
            }
            clients.append(AgentConnection(fd: fd, now: now))
        }
    }

    private func dropStalled(now: Double) {
        for k in clients.indices.reversed() {
            guard let since = clients[k].busySince, now - since >= limits.stall else { continue }
            let what = clients[k].hasOutput ? "did not read its reply" : "did not finish its message"
            clients.remove(at: k).close()
            report(.dropped(KeychainError(.io, "a client \(what) within \(Self.seconds(limits.stall)) s")))
        }
    }

    /// Milliseconds until the next stall deadline, or -1 for none.
    private func timeout(now: Double) -> Int32 {
        let deadlines = clients.compactMap { $0.busySince.map { $0 + limits.stall } }
        guard let next = deadlines.min() else { return -1 }
        return Int32(min(max((next - now) * 1000, 0).rounded(.up), 60_000))
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    static func monotonicNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
