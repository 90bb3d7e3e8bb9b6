import Glibc

/// The wall clock, read in one place: items' dates in milliseconds, session
/// expiry and failure back-off in seconds (CLOCK_REALTIME, as time(2)).
public enum Clock {
    /// Milliseconds since 1970.
    public static func milliseconds() -> Int64 {
        let ts = now()
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// Whole seconds since 1970.
    public static func seconds() -> Int64 { Int64(now().tv_sec) }

    /// Milliseconds on a clock that never jumps (CLOCK_MONOTONIC), for
    /// deadlines: only differences between two readings mean anything.
    public static func monotonicMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// The clock's reading. The corresponding C function is `clock_gettime(CLOCK_REALTIME)`.
    public static func now() -> timespec {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return ts
    }
}

/// The clock and the sleeper as an input: what reads the time and what waits
/// for it. The engine reads its `Environment.time`, so a test sets the time
/// instead of waiting for it. Only tests pass anything but `system`.
public struct TimeSource: Sendable {
    /// Milliseconds since 1970.
    public var milliseconds: @Sendable () -> Int64
    /// Waits about that many milliseconds.
    public var sleep: @Sendable (_ milliseconds: Int) -> Void

    public init(milliseconds: @escaping @Sendable () -> Int64, sleep: @escaping @Sendable (_ milliseconds: Int) -> Void) {
        self.milliseconds = milliseconds
        self.sleep = sleep
    }

    /// Whole seconds since 1970.
    public func seconds() -> Int64 { milliseconds() / 1000 }

    /// The reading as a file timestamp (a session's last use is its file's modification time).
    public func timestamp() -> timespec {
        let now = milliseconds()
        return timespec(tv_sec: Int(now / 1000), tv_nsec: Int(now % 1000) * 1_000_000)
    }

    /// The wall clock (`Clock`) and nanosleep(2).
    public static var system: TimeSource {
        TimeSource(milliseconds: { Clock.milliseconds() }, sleep: { milliseconds in
            guard milliseconds > 0 else { return }
            var request = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
            var left = timespec()
            // A signal handled meanwhile cuts it short: EINTR is retried with what is left.
            _ = nothingOrErrno("nanosleep") {
                defer { request = left }
                return nanosleep(&request, &left)
            }
        })
    }
}
