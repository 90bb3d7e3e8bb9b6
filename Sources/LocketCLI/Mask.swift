import Glibc
import LocketCore

/// The `exec --mask` filter: replaces every occurrence of any secret with
/// `<redacted>` in a byte stream, also when a secret is split across reads.
/// Only a tail that could still become a secret is held back, so output that
/// contains no secret flows through at once. The secrets stay in guarded,
/// wiped memory; only the held tail (at most a secret's length) is plain.
struct Masker {
    static let replacement = Array("<redacted>".utf8)
    private let secrets: [SecureBytes]
    private let firstBytes: Set<UInt8>
    private(set) var held: [UInt8] = []
    /// The last output ended with `<redacted>` for a run that reached the end
    /// of the data: a run continuing at the start of the next data is the same
    /// run, so the output does not depend on how the stream was chunked.
    private var runReachedEnd = false

    init(secrets: [SecureBytes]) {
        var unique: [SecureBytes] = []
        for secret in secrets where secret.count > 0 && !unique.contains(where: { $0.constantTimeEquals(secret) }) {
            unique.append(secret)
        }
        // Longest first, so that a secret containing another is masked whole.
        self.secrets = unique.sorted { $0.count > $1.count }
        firstBytes = Set(self.secrets.map { $0.withUnsafeBytes { $0[0] } })
    }

    /// Whether `data[i...]` begins with `secret` (`whole`), or is a proper
    /// prefix of it that more data could complete (`partial`).
    private static func compare(_ secret: SecureBytes, _ data: UnsafeRawBufferPointer, at i: Int) -> (whole: Bool, partial: Bool) {
        let rest = data.count - i
        return secret.withUnsafeBytes { s in
            if s.count <= rest { return (memcmp(s.baseAddress!, data.baseAddress! + i, s.count) == 0, false) }
            return (false, rest == 0 || memcmp(s.baseAddress!, data.baseAddress! + i, rest) == 0)
        }
    }

    /// Takes the next chunk; returns what can be written now.
    mutating func feed(_ chunk: UnsafeRawBufferPointer) -> [UInt8] {
        guard !secrets.isEmpty else { return Array(chunk) }
        guard chunk.count > 0 else { return [] }
        var data = held
        data.append(contentsOf: chunk)
        defer { for k in data.indices { data[k] = 0 } }
        return scan(data, final: false)
    }

    /// Masks `data`: every byte inside any occurrence of any secret is hidden,
    /// and each run of hidden bytes (overlapping or adjacent occurrences)
    /// becomes one `<redacted>`. Unless `final`, a tail that may still grow
    /// into a secret, or into a longer or overlapping one, is held back.
    private mutating func scan(_ data: [UInt8], final: Bool) -> [UInt8] {
        held.removeAll(keepingCapacity: true)
        var out: [UInt8] = []
        out.reserveCapacity(data.count)
        var runStart: Int?
        var runEnd = 0
        if data.isEmpty { return [] }
        var continuesRun = runReachedEnd
        runReachedEnd = false
        var i = 0
        while i < data.count {
            if firstBytes.contains(data[i]) {
                // The first (longest) secret found whole here, and whether one might still be.
                let (whole, partial) = data.withUnsafeBytes { d -> (Int?, Bool) in
                    var whole: Int?, partial = false
                    for k in secrets.indices {
                        let match = Masker.compare(secrets[k], d, at: i)
                        if match.whole && whole == nil { whole = k }
                        partial = partial || match.partial
                    }
                    return (whole, partial)
                }
                if !final, partial {
                    held = Array(data[(runStart ?? i)...])
                    // Held bytes are scanned again with the next data. They continue
                    // the previous run only if nothing before them was written now;
                    // otherwise the byte before them is plain output.
                    runReachedEnd = (runStart ?? i) == 0 ? continuesRun : false
                    return out
                }
                if let k = whole {
                    if runStart == nil { runStart = i }
                    runEnd = max(runEnd, i + secrets[k].count)
                }
            }
            if i == 0 && runStart == nil { continuesRun = false }
            if runStart != nil, i >= runEnd {
                if !(continuesRun && runStart == 0) { out.append(contentsOf: Masker.replacement) }
                continuesRun = false
                runStart = nil
            }
            if runStart == nil { out.append(data[i]) }
            i += 1
        }
        if runStart != nil {
            if !(continuesRun && runStart == 0) { out.append(contentsOf: Masker.replacement) }
            runReachedEnd = true
        }
        return out
    }

    /// Releases the held tail: at the end of the stream, or when the writer
    /// has paused long enough that it is not in the middle of writing a secret.
    mutating func flush() -> [UInt8] {
        var data = held
        defer { for k in data.indices { data[k] = 0 } }
        let out = scan(data, final: true)
        held.removeAll()
        return out
    }
}
