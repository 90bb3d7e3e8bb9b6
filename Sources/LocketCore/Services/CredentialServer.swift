import Glibc
import LocketSupport

/// Answers systemd's `LoadCredential=ID:/PATH` on a `CredentialSocket`, as
/// systemd.exec(5) describes the exchange: systemd binds its end to the
/// abstract address `\0RANDOM/unit/UNIT/ID`, connects, shuts down its
/// writing side and reads the credential until the end of the stream. The
/// server reads the unit and the ID from that address, asks `answer` for the
/// bytes, writes them and closes. Anything refused (a peer that is neither
/// root nor this user, an address that names no unit and ID, whatever
/// `answer` throws) is closed with nothing written (systemd then gives the
/// unit an empty credential), and `report` hears of it: names, never a secret.
///
/// One thread, one poll loop, and no peer waits for another (issue 44): a
/// connection is answered when it is accepted (a keychain lookup, about a
/// millisecond), and what the socket buffer does not take at once is
/// written, without blocking, as that peer reads, beside every other
/// connection. Each connection has `deadline` seconds from its accept to its
/// last byte; one that has not read its credential by then is closed and
/// reported (on a Unix socket it then ends with part of it: systemd reads
/// at once, only a stalled or hostile reader gets there). At most
/// `maximumWriting` connections are being written at once, each holding its
/// credential (up to 1 MiB); beyond that new ones wait in the listen queue
/// until one is done or its deadline passes.
public final class CredentialServer {
    /// What a connection asks for.
    public struct Request: Sendable, Equatable {
        /// The unit's name, as systemd put it in the address (`deploy.service`).
        public var unit: String
        /// The credential ID of its `LoadCredential=` line.
        public var credential: String
        /// The peer's uid (SO_PEERCRED): root for the system manager.
        public var uid: UInt32

        public init(unit: String, credential: String, uid: UInt32) {
            self.unit = unit
            self.credential = credential
            self.uid = uid
        }
    }

    /// What happened to one connection.
    public enum Event: Sendable {
        /// The credential was written whole.
        case gave(Request, bytes: Int)
        /// `answer` refused it, or it could not be written (whole, in time).
        case refused(Request, KeychainError)
        /// A peer that is neither root nor this user.
        case peerRefused(uid: UInt32)
        /// A peer whose address names no unit and credential.
        case unnamed(uid: UInt32, address: String)
        /// A connection that failed before it asked for anything.
        case dropped(KeychainError)
    }

    /// systemd's CREDENTIAL_SIZE_MAX: a larger credential fails the unit.
    public static let maximumCredentialSize = 1 << 20
    /// The most connections being written at once (each holds its credential).
    public static let maximumWriting = 32

    private let socket: CredentialSocket
    private let deadline: Double
    private let answer: (Request) throws -> SecureBytes
    private let report: (Event) -> Void
    /// Connections with part of their credential still to write, oldest first.
    private var writing: [Writing] = []

    /// `deadline`: the seconds a connection may take from its accept to its last byte.
    public init(socket: CredentialSocket, deadline: Double = 10, answer: @escaping (Request) throws -> SecureBytes,
                report: @escaping (Event) -> Void) {
        self.socket = socket
        self.deadline = deadline
        self.answer = answer
        self.report = report
    }

    deinit { for connection in writing { close(connection.fd) } }

    /// Serves until `stop` returns true; `stop` is called with each of
    /// `watching` (a signalfd) that becomes readable.
    public func serve(watching: [Int32], stop: (Int32) -> Bool) throws {
        while true {
            var fds = watching.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            // A negative descriptor is left out by poll: full, new connections wait in the queue.
            fds.append(pollfd(fd: writing.count < Self.maximumWriting ? socket.descriptor : -1, events: Int16(POLLIN), revents: 0))
            fds += writing.map { pollfd(fd: $0.fd, events: Int16(POLLOUT), revents: 0) }
            let timeout = writing.map(\.deadline).min().map { Int32(clamping: max(0, $0 - Clock.monotonicMilliseconds())) } ?? -1
            _ = try valueOrErrno("poll") { poll(&fds, nfds_t(fds.count), timeout) }
                .get { KeychainError(.io, "the credential socket could not wait for connections: \($0)") }
            for k in watching.indices where fds[k].revents != 0 {
                if stop(fds[k].fd) { return }
            }
            // Readiness goes with the descriptors polled; the connections accepted below were not.
            let ready = Set(fds.dropFirst(watching.count + 1).filter { $0.revents != 0 }.map(\.fd))
            writeReady(ready)
            if fds[watching.count].revents != 0 { acceptAll() }
        }
    }

    /// Writes on to each ready connection; closes those done, failed or past their deadline.
    private func writeReady(_ ready: Set<Int32>) {
        let now = Clock.monotonicMilliseconds()
        writing.removeAll { connection in
            if ready.contains(connection.fd) {
                switch connection.writeMore() {
                case .done:
                    report(.gave(connection.request, bytes: connection.secret.count))
                    close(connection.fd)
                    return true
                case .failed(let failure):
                    report(.refused(connection.request, KeychainError(.io, "the credential could not be written: \(failure)")))
                    close(connection.fd)
                    return true
                case .more:
                    break
                }
            }
            guard now >= connection.deadline else { return false }
            report(.refused(connection.request, KeychainError(.io, "the peer had not read the credential after \(Self.seconds(deadline)) s (\(connection.written) of \(connection.secret.count) bytes); the connection was closed")))
            close(connection.fd)
            return true
        }
    }

    private func acceptAll() {
        while writing.count < Self.maximumWriting {
            switch socket.listening.accept() {
            case .none: return
            case .failed(let failure):
                report(.dropped(KeychainError(.io, "cannot accept a connection: \(failure)")))
                return
            case .unidentified(let failure):
                report(.dropped(KeychainError(.io, "cannot tell who connected: \(failure)")))
            case .connection(let fd, let uid):
                if !handle(fd, uid: uid) { close(fd) }
            }
        }
    }

    /// Answers one connection; true when it is kept to be written on (the loop closes it later).
    private func handle(_ fd: Int32, uid: UInt32) -> Bool {
        guard uid == 0 || uid == geteuid() else {
            report(.peerRefused(uid: uid))
            return false
        }
        let address = Self.peerAddress(fd)
        guard let (unit, credential) = Self.parse(address: address) else {
            report(.unnamed(uid: uid, address: Printable.escape(String(decoding: address.map { $0 == 0 ? UInt8(ascii: "@") : $0 }, as: UTF8.self))))
            return false
        }
        let request = Request(unit: unit, credential: credential, uid: uid)
        let secret: SecureBytes
        do {
            secret = try answer(request)
            guard secret.count <= Self.maximumCredentialSize else {
                throw KeychainError(.dataTooLarge, "the secret is \(ByteSize.text(secret.count)), more than the \(ByteSize.text(Self.maximumCredentialSize)) systemd takes for a credential")
            }
        } catch let error as KeychainError {
            report(.refused(request, error))
            return false
        } catch {
            report(.refused(request, KeychainError(.io, "unexpected failure: \(error)")))
            return false
        }
        // The descriptor is non-blocking: what the socket takes now, the rest as the peer reads.
        let connection = Writing(fd: fd, request: request, secret: secret,
                                 deadline: Clock.monotonicMilliseconds() + Int64(deadline * 1000))
        switch connection.writeMore() {
        case .done:
            report(.gave(request, bytes: secret.count))
            return false
        case .failed(let failure):
            report(.refused(request, KeychainError(.io, "the credential could not be written: \(failure)")))
            return false
        case .more:
            writing.append(connection)
            return true
        }
    }

    /// `seconds` as a message says it: whole when it is.
    private static func seconds(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }

    /// The address the peer bound, as bytes of sun_path (an abstract one
    /// starts with its NUL); empty for an unnamed peer.
    static func peerAddress(_ fd: Int32) -> [UInt8] {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let got = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        let header = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
        guard got == 0, Int(length) > header else { return [] }
        let count = min(Int(length) - header, MemoryLayout.size(ofValue: address.sun_path))
        return withUnsafeBytes(of: &address.sun_path) { Array($0.prefix(count)) }
    }

    /// The unit and credential ID of an abstract address `\0RANDOM/unit/UNIT/ID`
    /// (RANDOM: hexadecimal digits); nil for anything else, a path included.
    public static func parse(address: [UInt8]) -> (unit: String, credential: String)? {
        guard address.first == 0 else { return nil }
        let parts = address.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard parts.count == 4, (1...16).contains(parts[0].count), parts[0].allSatisfy({ hexDigit($0) != nil }),
              parts[1].elementsEqual("unit".utf8), !parts[2].isEmpty, !parts[3].isEmpty,
              let unit = String(validating: parts[2], as: UTF8.self), let credential = String(validating: parts[3], as: UTF8.self),
              !unit.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }),
              !credential.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) else { return nil }
        return (unit, credential)
    }
}

/// A connection whose credential is being written as its peer reads.
private final class Writing {
    let fd: Int32
    let request: CredentialServer.Request
    let secret: SecureBytes
    /// When it is closed, done or not (CLOCK_MONOTONIC, milliseconds).
    let deadline: Int64
    private(set) var written = 0

    init(fd: Int32, request: CredentialServer.Request, secret: SecureBytes, deadline: Int64) {
        self.fd = fd
        self.request = request
        self.secret = secret
        self.deadline = deadline
    }

    enum Progress { case done, more, failed(Errno) }

    /// Writes what the socket takes now, never waiting (MSG_NOSIGNAL: a
    /// reader that left is an error here, not a signal to the process).
    func writeMore() -> Progress {
        let count = secret.count
        while written < count {
            let sent = secret.withUnsafeBytes { raw in
                valueOrErrno("send") { send(fd, raw.baseAddress! + written, count - written, Int32(MSG_NOSIGNAL)) }
            }
            switch sent {
            case .success(let n): written += n
            case .failure(let failure) where failure.code == EAGAIN || failure.code == EWOULDBLOCK: return .more
            case .failure(let failure): return .failed(failure)
            }
        }
        return .done
    }
}
