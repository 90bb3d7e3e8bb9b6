/// The `exec --mask` filter: replaces every occurrence of any secret with
/// `<redacted>` in a byte stream, also when a secret is split across reads.
/// Only a tail that could still become a secret is held back, so output that
/// contains no secret flows through at once.
struct Masker {
    static let replacement = Array("<redacted>".utf8)
    private let secrets: [[UInt8]]
    private let firstBytes: Set<UInt8>
    private(set) var held: [UInt8] = []

    init(secrets: [[UInt8]]) {
        // Longest first, so that a secret containing another is masked whole.
        self.secrets = Array(Set(secrets.filter { !$0.isEmpty })).sorted { $0.count > $1.count }
        firstBytes = Set(self.secrets.map { $0[0] })
    }

    /// Takes the next chunk; returns what can be written now.
    mutating func feed(_ chunk: UnsafeRawBufferPointer) -> [UInt8] {
        guard !secrets.isEmpty else { return Array(chunk) }
        var data = held
        data.append(contentsOf: chunk)
        held.removeAll(keepingCapacity: true)
        var out: [UInt8] = []
        out.reserveCapacity(data.count)
        var i = 0
        scan: while i < data.count {
            if firstBytes.contains(data[i]) {
                let rest = data[i...]
                for secret in secrets where rest.starts(with: secret) {
                    out.append(contentsOf: Masker.replacement)
                    i += secret.count
                    continue scan
                }
                // The chunk ends inside what may be the start of a secret: wait for more.
                if secrets.contains(where: { $0.count > rest.count && $0.starts(with: rest) }) {
                    held = Array(rest)
                    break scan
                }
            }
            out.append(data[i])
            i += 1
        }
        for k in data.indices { data[k] = 0 }
        return out
    }

    /// Releases the held tail: at the end of the stream, or when the writer
    /// has paused long enough that it is not in the middle of writing a secret.
    mutating func flush() -> [UInt8] {
        defer { held.removeAll() }
        return held
    }
}
