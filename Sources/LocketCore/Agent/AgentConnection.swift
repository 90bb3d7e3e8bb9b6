import Glibc
import LocketSupport

/// One client of the agent: a non-blocking socket, the bytes of the message
/// being received (wiped once answered: `ssh-add` sends a private key, `-x`
/// a passphrase), and the reply not yet written.
final class AgentConnection {
    let fd: Int32
    /// Room for one whole message: its length and the longest contents allowed.
    private let input: UnsafeMutableRawBufferPointer
    private var filled = 0
    private var output: [UInt8] = []
    private var written = 0
    /// Since when the client has owed us the rest of a message, or a read of
    /// our reply; nil while it is idle between requests.
    private(set) var busySince: Double?
    /// When the client last finished a request (or connected).
    private(set) var lastActive: Double

    init(fd: Int32, now: Double) {
        self.fd = fd
        input = .allocate(byteCount: 4 + AgentMessage.maximumLength, alignment: 8)
        lastActive = now
    }

    /// Whether a reply is waiting to be written (the client is not read meanwhile).
    var hasOutput: Bool { written < output.count }
    /// Neither part of a message nor a reply is pending.
    var isIdle: Bool { filled == 0 && !hasOutput }

    /// What became of the connection after some I/O.
    enum Outcome: Equatable {
        case open
        /// The client hung up or the socket failed: close quietly.
        case closed
        /// The client broke the protocol: close and report.
        case dropped(KeychainError)
    }

    /// How many messages one connection gets answered before the others get
    /// a turn: one client sending requests without pause must not hold the
    /// agent (signing with RSA-4096 takes milliseconds each).
    static let turn = 16

    /// Whether a whole message (or a length over the limit) is waiting to be answered.
    var hasWholeMessage: Bool {
        guard filled >= 4 else { return false }
        let length = Int(input[0]) << 24 | Int(input[1]) << 16 | Int(input[2]) << 8 | Int(input[3])
        return length > AgentMessage.maximumLength || filled >= 4 + length
    }

    /// Reads what the client sent (one read, when `readable`), answers up
    /// to `turn` whole messages and writes the replies as far as the socket takes them.
    func receive(_ engine: AgentEngine, readable: Bool, now: Double, report: (AgentEvent) -> Void) -> Outcome {
        if readable && filled < input.count {
            switch valueOrErrno("read", { read(fd, input.baseAddress! + filled, input.count - filled) }) {
            case .success(0):
                return .closed
            case .success(let n):
                filled += n
                if busySince == nil { busySince = now }
            case .failure(let failure):
                if failure.code != EAGAIN && failure.code != EWOULDBLOCK { return .closed }
            }
        }
        return answer(engine, now: now, report: report)
    }

    /// Writes what is left of the replies, then answers messages that arrived meanwhile.
    func send(_ engine: AgentEngine, now: Double, report: (AgentEvent) -> Void) -> Outcome {
        let outcome = flush(now: now)
        guard outcome == .open, !hasOutput else { return outcome }
        return answer(engine, now: now, report: report)
    }

    /// Answers up to `turn` whole messages in the input, stopping while a reply can't be written.
    private func answer(_ engine: AgentEngine, now: Double, report: (AgentEvent) -> Void) -> Outcome {
        var answered = 0
        while filled >= 4 && !hasOutput && answered < Self.turn {
            let bytes = UnsafeRawBufferPointer(input)
            let length = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
            guard length <= AgentMessage.maximumLength else {
                return .dropped(KeychainError(.dataTooLarge, "an agent message of \(length) bytes (the limit is \(ByteSize.text(AgentMessage.maximumLength)))"))
            }
            guard filled >= 4 + length else { break }
            let (reply, event) = engine.respond(to: UnsafeRawBufferPointer(rebasing: bytes[4..<(4 + length)]))
            if let event { report(event) }
            consume(4 + length)
            answered += 1
            output = reply
            written = 0
            lastActive = now
            busySince = nil
            let outcome = flush(now: now)
            if outcome != .open { return outcome }
        }
        // What is left is the start of the next message: its clock starts now.
        if filled > 0 && busySince == nil { busySince = now }
        return .open
    }

    private func flush(now: Double) -> Outcome {
        while hasOutput {
            switch output.withUnsafeBytes({ raw in valueOrErrno("write") { write(fd, raw.baseAddress! + written, raw.count - written) } }) {
            case .success(let n) where n > 0:
                written += n
            case .failure(let failure) where failure.code == EAGAIN || failure.code == EWOULDBLOCK:
                if busySince == nil { busySince = now }
                return .open
            default:
                return .closed
            }
        }
        output = []
        written = 0
        busySince = filled == 0 ? nil : now
        return .open
    }

    /// Drops the first `count` bytes of the input, wiping what they held.
    private func consume(_ count: Int) {
        let base = input.baseAddress!
        let rest = filled - count
        if rest > 0 { memmove(base, base + count, rest) }
        explicit_bzero(base + rest, count)
        filled = rest
    }

    /// Closes the socket and wipes the input (only its first `filled` bytes
    /// can be non-zero: `consume` wipes what it moves away from).
    func close() {
        explicit_bzero(input.baseAddress!, filled)
        input.deallocate()
        Glibc.close(fd)
    }
}
