import Glibc

/// `keychain audit --since`: a UTC date or an age, to microseconds since 1970; and the rows' times as ISO 8601 UTC.
package enum AuditTime {
    package static func parse(_ text: String, now: Int64) throws -> Int64 {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        if let unit = text.last, let scale = units[unit], let count = Int64(text.dropLast()), count >= 0, count < 1 << 32 {
            return now - count * scale * 1_000_000
        }
        // YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, UTC.
        let digits = text.split(omittingEmptySubsequences: false) { "-T:Z".contains($0) }
        let fields = digits.compactMap { Int32($0) }
        guard (text.count == 10 && fields.count == 3) || (text.count == 20 && text.hasSuffix("Z") && fields.count == 6) else {
            throw UsageError(message: "--since takes a date (2026-11-23 or 2026-11-23T18:00:00Z) or an age (30m, 12h, 7d)", command: "keychain")
        }
        var parts = tm()
        parts.tm_year = fields[0] - 1900
        parts.tm_mon = fields[1] - 1
        parts.tm_mday = fields[2]
        if fields.count == 6 { (parts.tm_hour, parts.tm_min, parts.tm_sec) = (fields[3], fields[4], fields[5]) }
        return Int64(timegm(&parts)) * 1_000_000
    }

    package static func format(_ microseconds: Int64) -> String {
        var seconds = time_t(microseconds / 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}
