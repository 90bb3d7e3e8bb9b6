import Glibc

/// Fuzzing only (`fuzz/`, target FuzzAgent): the agent's framing and
/// requests, over a real socket pair, as a client's bytes reach them.
extension FuzzEntryPoints {
    /// Writes each chunk to a connection and lets it answer; returns the
    /// bytes the client end received and whether the connection was closed
    /// by the agent. Every reply must be a whole frame; nothing may crash.
    public static func agentConnection(_ chunks: [[UInt8]], source: any AgentKeySource) -> (replies: [UInt8], closed: Bool) {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else { return ([], false) }
        defer { close(pair[0]) }
        _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
        _ = fcntl(pair[1], F_SETFL, fcntl(pair[1], F_GETFL) | O_NONBLOCK)
        let connection = AgentConnection(fd: pair[1], now: 0)
        defer { connection.close() }
        let engine = AgentEngine(source: source)
        var replies: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        func drain() {
            while true {
                let n = buffer.withUnsafeMutableBytes { read(pair[0], $0.baseAddress!, $0.count) }
                guard n > 0 else { return }
                replies += buffer[0..<n]
            }
        }
        for chunk in chunks {
            let written = chunk.withUnsafeBytes { $0.count == 0 ? 0 : write(pair[0], $0.baseAddress!, $0.count) }
            guard written == chunk.count else { break }
            var outcome = connection.receive(engine, readable: true, now: 0) { _ in }
            // Replies written, and messages left for a later turn answered, as the server would.
            while outcome == .open && (connection.hasOutput || connection.hasWholeMessage) {
                drain()
                outcome = connection.hasOutput ? connection.send(engine, now: 0) { _ in }
                                               : connection.receive(engine, readable: false, now: 0) { _ in }
            }
            drain()
            if outcome != .open { return (replies, true) }
        }
        return (replies, false)
    }
}
