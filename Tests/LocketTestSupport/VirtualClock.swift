import Foundation
import LocketCore
import LocketSupport

/// Time that passes only when someone sleeps or a test moves it: each sleep
/// moves it on by what was asked, at once. Given to the engine as
/// `Environment.time`, so that a test of a delay, an expiry or an age sets
/// the time instead of waiting for it.
public final class VirtualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var now: Int64
    private var total: Int64 = 0

    /// Starting at `start` milliseconds since 1970 (the wall clock's reading by default).
    public init(start: Int64 = Clock.milliseconds()) { now = start }

    /// Milliseconds slept in all.
    public var slept: Int64 { lock.withLock { total } }

    /// The reading, in milliseconds since 1970.
    public var milliseconds: Int64 { lock.withLock { now } }

    /// The reading, in seconds since 1970 with a fraction.
    public var seconds: Double { Double(milliseconds) / 1000 }

    /// Moves the time on by `milliseconds` without anyone sleeping.
    public func advance(milliseconds: Int64) { lock.withLock { now += milliseconds } }

    /// Moves the time on by `seconds` without anyone sleeping.
    public func advance(seconds: Double) { advance(milliseconds: Int64((seconds * 1000).rounded())) }

    /// Sets the time to `milliseconds` since 1970.
    public func set(milliseconds: Int64) { lock.withLock { now = milliseconds } }

    public var source: TimeSource {
        TimeSource(milliseconds: { [self] in lock.withLock { now } },
                   sleep: { [self] milliseconds in lock.withLock { now += Int64(milliseconds); total += Int64(milliseconds) } })
    }

    /// `environment` reading this clock.
    public func environment(_ variables: [String: String]) -> Environment { Environment(variables, time: source) }
}
