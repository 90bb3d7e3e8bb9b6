import CDBus
import Glibc

/// Method calls read from the bus and not yet answered, a queue per
/// connection (issue 44). The provider has one thread, and in the order the
/// bus delivered them, a client that sent 10,000 calls (or a program whose
/// 500 connections open sessions as fast as they are answered) held up
/// every call sent after them. Here the next call answered is the oldest
/// of the client answered least lately (least attained service), a client
/// being a process (`account`: its connections count together): a program
/// making a call now and then is answered next, whatever the others have
/// queued, and those that keep the provider busy take turns. Each
/// connection's calls keep their order. What a client was answered halves
/// every 10 seconds, so a busy hour long ago counts for nothing.
///
/// Holds a reference to each message until it is taken (`pop`) or dropped.
/// Bounded: past `Limits.queuedCalls`, the newest call of the client with
/// the most waiting is refused at once (LimitsExceeded), which costs far
/// less than answering it and lets the loop read on to the other clients'.
struct CallQueue {
    private struct Line {
        var messages: [OpaquePointer] = []
        var head = 0
        /// Not served until released: its client's identity is being asked.
        var held = false
        /// Whom its answers are counted to (`served`).
        var account: String
        var isEmpty: Bool { head == messages.count }
        var waiting: Int { messages.count - head }
    }

    private var lines: [String: Line] = [:]
    /// The connections with calls that may be answered, in the order they came, with their accounts.
    private var ready: [(sender: String, account: String)] = []
    /// Calls answered lately, per account (halved every `decayPeriod` seconds).
    private var served: [String: Double] = [:]
    private var decayedAt = CallQueue.now()
    private static let decayPeriod = 10.0
    private(set) var count = 0

    /// Queues `message` (referenced here) from `sender`, counted to
    /// `account`, or held when that is not known yet (`release` gives it);
    /// returns a message to refuse when the queues are full (this one, or
    /// another connection's newest).
    mutating func push(_ message: OpaquePointer, from sender: String, account: String?) -> OpaquePointer? {
        // Full (a flood: a scan of the connections is cheap beside answering): the heaviest gives way.
        if count >= Limits.queuedCalls, let (heaviest, line) = lines.max(by: { $0.value.waiting < $1.value.waiting }),
           line.waiting >= (lines[sender]?.waiting ?? 0) {
            guard heaviest != sender else { return message }
            let refused = lines[heaviest]!.messages.removeLast()
            count -= 1
            append(message, from: sender, account: account)
            if lines[heaviest]!.isEmpty { forget(heaviest) }
            return refused
        }
        append(message, from: sender, account: account)
        return nil
    }

    private mutating func append(_ message: OpaquePointer, from sender: String, account: String?) {
        dbus_message_ref(message)
        if lines[sender] == nil {
            lines[sender] = Line(held: account == nil, account: account ?? sender)
            if let account { ready.append((sender, account)) }
        }
        lines[sender]!.messages.append(message)
        count += 1
    }

    /// `sender`'s calls, counted to `account`, may be answered now.
    mutating func release(_ sender: String, account: String) {
        guard lines[sender]?.held == true else { return }
        lines[sender]!.held = false
        lines[sender]!.account = account
        ready.append((sender, account))
    }

    /// The next call to answer (the caller unreferences it), nil when none may be.
    mutating func pop() -> OpaquePointer? {
        guard !ready.isEmpty else { return nil }
        decay()
        // The client answered least lately; the earliest of those tied.
        var chosen = 0
        var least = served[ready[0].account] ?? 0
        for k in ready.indices.dropFirst() {
            let attained = served[ready[k].account] ?? 0
            if attained < least {
                least = attained
                chosen = k
            }
        }
        let (sender, account) = ready[chosen]
        let message = lines[sender]!.messages[lines[sender]!.head]
        lines[sender]!.head += 1
        served[account] = least + 1
        count -= 1
        if lines[sender]!.isEmpty {
            forget(sender)
        } else if lines[sender]!.head >= 1024 {
            // A long line's answered part is not kept.
            lines[sender]!.messages.removeFirst(lines[sender]!.head)
            lines[sender]!.head = 0
        }
        return message
    }

    /// Drops `sender`'s calls (it left the bus: nobody to answer).
    mutating func drop(_ sender: String) {
        guard let line = lines[sender] else { return }
        for message in line.messages[line.head...] {
            dbus_message_unref(message)
            count -= 1
        }
        forget(sender)
    }

    /// Drops every call (the provider is going away).
    mutating func removeAll() {
        for sender in Array(lines.keys) { drop(sender) }
    }

    private mutating func forget(_ sender: String) {
        lines[sender] = nil
        if let index = ready.firstIndex(where: { $0.sender == sender }) { ready.remove(at: index) }
    }

    private mutating func decay() {
        let now = CallQueue.now()
        guard now - decayedAt >= CallQueue.decayPeriod else { return }
        decayedAt = now
        for (sender, attained) in served { served[sender] = attained < 1 ? nil : attained / 2 }
    }

    private static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
