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
/// One connection at a time: an answer is a keychain lookup (about a
/// millisecond), and only root and this user can connect at all. A peer that
/// stops reading a large credential is dropped after `stall` seconds.
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
        /// `answer` refused it, or it could not be written.
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

    private let socket: CredentialSocket
    private let stall: Double
    private let answer: (Request) throws -> SecureBytes
    private let report: (Event) -> Void

    public init(socket: CredentialSocket, stall: Double = 10, answer: @escaping (Request) throws -> SecureBytes,
                report: @escaping (Event) -> Void) {
        self.socket = socket
        self.stall = stall
        self.answer = answer
        self.report = report
    }

    /// Serves until `stop` returns true; `stop` is called with each of
    /// `watching` (a signalfd) that becomes readable.
    public func serve(watching: [Int32], stop: (Int32) -> Bool) throws {
        while true {
            var fds = watching.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            fds.append(pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0))
            _ = try valueOrErrno("poll") { poll(&fds, nfds_t(fds.count), -1) }
                .get { KeychainError(.io, "the credential socket could not wait for connections: \($0)") }
            for k in watching.indices where fds[k].revents != 0 {
                if stop(fds[k].fd) { return }
            }
            if fds[watching.count].revents != 0 { acceptAll() }
        }
    }

    private func acceptAll() {
        while true {
            switch socket.listening.accept() {
            case .none: return
            case .failed(let failure):
                report(.dropped(KeychainError(.io, "cannot accept a connection: \(failure)")))
                return
            case .unidentified(let failure):
                report(.dropped(KeychainError(.io, "cannot tell who connected: \(failure)")))
            case .connection(let fd, let uid):
                handle(fd, uid: uid)
                close(fd)
            }
        }
    }

    private func handle(_ fd: Int32, uid: UInt32) {
        guard uid == 0 || uid == geteuid() else {
            report(.peerRefused(uid: uid))
            return
        }
        let address = Self.peerAddress(fd)
        guard let (unit, credential) = Self.parse(address: address) else {
            report(.unnamed(uid: uid, address: Printable.escape(String(decoding: address.map { $0 == 0 ? UInt8(ascii: "@") : $0 }, as: UTF8.self))))
            return
        }
        let request = Request(unit: unit, credential: credential, uid: uid)
        do {
            let secret = try answer(request)
            guard secret.count <= Self.maximumCredentialSize else {
                throw KeychainError(.dataTooLarge, "the secret is \(secret.count) bytes, more than the 1 MiB systemd takes for a credential")
            }
            // Blocking, with a deadline: systemd reads at once, and a peer that stalls can't hold the others up.
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
            var limit = timeval(tv_sec: Int(stall), tv_usec: Int((stall - stall.rounded(.down)) * 1_000_000))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            try secret.withUnsafeBytes { writeAll(fd, $0) }.get { KeychainError(.io, "the credential could not be written: \($0)") }
            report(.gave(request, bytes: secret.count))
        } catch let error as KeychainError {
            report(.refused(request, error))
        } catch {
            report(.refused(request, KeychainError(.io, "unexpected failure: \(error)")))
        }
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
