import Glibc
import LocketCore
import LocketSupport

/// The `exec --mask` filter: replaces every occurrence of any secret with
/// `<redacted>` in a byte stream, also when a secret is split across reads.
///
/// A tail that could still become a secret (a proper prefix of one) is held
/// until more data decides it or the stream ends (`finish`), never released
/// on a timer: a writer that pauses half-way through a secret must not leak
/// its first half (SPEC §16). Everything before that tail flows at once, so
/// output that contains no secret is never delayed, and the held tail is
/// never longer than the longest secret. The secrets stay in guarded, wiped
/// memory; the held tail is wiped whenever it is replaced.
///
/// What it can't catch: a secret that never appears byte for byte in one
/// stream (split between stdout and stderr, encoded, reversed, cut by
/// inserted characters), and whatever the command writes elsewhere (a file,
/// the terminal, the network).
struct Masker {
    static let replacement = Array("<redacted>".utf8)
    private let secrets: [SecureBytes]
    private let firstBytes: Set<UInt8>
    /// Bytes not yet written: a proper prefix of some secret.
    private var held: [UInt8] = []
    /// The output so far ends with the `<redacted>` of a run of hidden bytes
    /// that more data may continue (by an occurrence overlapping or adjacent
    /// to it): then that continuation is part of the same run and gets no
    /// second `<redacted>`, so the output does not depend on the chunking.
    private var runOpen = false
    /// How many bytes at the start of `held` lie inside that open run (an
    /// occurrence that reached into the held tail); they are hidden already.
    private var coveredPrefix = 0

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
        var data: [UInt8] = []
        data.reserveCapacity(held.count + chunk.count)
        data.append(contentsOf: held)
        data.append(contentsOf: chunk)
        defer { wipe(&data) }
        return scan(data, final: false)
    }

    /// The end of the stream: whatever is held can no longer become a
    /// secret and is written as it is.
    mutating func finish() -> [UInt8] {
        var data = held
        defer { wipe(&data) }
        let out = scan(data, final: true)
        dropHeld()
        runOpen = false
        coveredPrefix = 0
        return out
    }

    private mutating func dropHeld() {
        wipe(&held)
        held.removeAll()
    }

    /// Masks `data` (the held tail, then new bytes): every byte inside any
    /// occurrence of any secret is hidden, and each run of hidden bytes
    /// (overlapping or adjacent occurrences) becomes one `<redacted>`.
    /// Unless `final`, the tail from the first position where a secret may
    /// still begin is held back.
    private mutating func scan(_ data: [UInt8], final: Bool) -> [UInt8] {
        dropHeld()
        if data.isEmpty { return [] }
        var out: [UInt8] = []
        out.reserveCapacity(data.count)
        // The run the previous output ended in, if any, continues here.
        var runStart: Int? = runOpen ? 0 : nil
        var runEnd = runOpen ? coveredPrefix : 0
        var runEmitted = runOpen
        runOpen = false
        coveredPrefix = 0
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
                    // Undecided from here on. A run still open here reaches at
                    // least to i (it would have closed otherwise): its
                    // `<redacted>` goes out now, and bytes of it inside the
                    // held tail stay hidden when they are scanned again.
                    if runStart != nil {
                        if !runEmitted { out.append(contentsOf: Masker.replacement) }
                        runOpen = true
                        coveredPrefix = runEnd - i
                    }
                    held = Array(data[i...])
                    return out
                }
                if let k = whole {
                    if runStart == nil { runStart = i; runEmitted = false }
                    runEnd = max(runEnd, i + secrets[k].count)
                }
            }
            if runStart != nil, i >= runEnd {
                if !runEmitted { out.append(contentsOf: Masker.replacement) }
                runStart = nil
            }
            if runStart == nil { out.append(data[i]) }
            i += 1
        }
        if runStart != nil {
            if !runEmitted { out.append(contentsOf: Masker.replacement) }
            runOpen = true
        }
        return out
    }
}
