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

    /// The clock's reading. The corresponding C function is `clock_gettime(CLOCK_REALTIME)`.
    public static func now() -> timespec {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return ts
    }
}
