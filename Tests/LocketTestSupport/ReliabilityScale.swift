import Foundation

/// How long the reliability tests run. Each test names its full count or
/// duration (what `make test` ran until issue 12); `make test` runs a fifth of
/// it, never fewer than 5 rounds or 2 s, and `make soak` sets `LOCKET_SOAK=1`,
/// which runs ten times the full count (fifty times `make test`'s);
/// `LOCKET_SOAK=N` with N > 1 runs N times the full count. The round trips
/// whose full size is what a soak runs (the 100 k backups) ask `soak` alone.
/// Here for both test targets.
public enum ReliabilityScale {
    public static let factor: Double = {
        guard let text = ProcessInfo.processInfo.environment["LOCKET_SOAK"], let n = Int(text), n > 0 else { return 0.2 }
        return n == 1 ? 10 : Double(n)
    }()

    /// Whether this is a soak run (`LOCKET_SOAK` set).
    public static var soak: Bool { factor >= 1 }

    /// `count` scaled; in `make test` at least 5 (or `count`, if smaller).
    public static func n(_ count: Int) -> Int { max(min(count, 5), Int((Double(count) * factor).rounded())) }

    /// `seconds` scaled; in `make test` at least 2 s (or `seconds`, if shorter).
    public static func seconds(_ seconds: Double) -> Double { max(min(seconds, 2), seconds * factor) }

    /// The seed of this run: `LOCKET_SEED`, else random. Printed so a failure can be replayed.
    public static let seed: UInt64 = {
        if let text = ProcessInfo.processInfo.environment["LOCKET_SEED"], let n = UInt64(text) { return n }
        return UInt64.random(in: 1...UInt64(UInt32.max))
    }()
}
