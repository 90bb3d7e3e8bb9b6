/// UTF-8 validation in place (RFC 3629: no overlong forms, surrogates or
/// values past U+10FFFF): making a String of a secret to validate it would
/// leave an unwiped copy behind.
public enum UTF8Check {
    /// Whether `r` is well-formed UTF-8; with `allowingNUL` false, also free of NUL bytes.
    public static func isValid(_ r: UnsafeRawBufferPointer, allowingNUL: Bool = true) -> Bool {
        var i = 0
        while i < r.count {
            let b = r[i]
            if b < 0x80 {
                guard b != 0 || allowingNUL else { return false }
                i += 1
                continue
            }
            let n: Int
            var lower: UInt8 = 0x80, upper: UInt8 = 0xbf
            switch b {
            case 0xc2...0xdf: n = 1
            case 0xe0: n = 2; lower = 0xa0
            case 0xe1...0xec, 0xee, 0xef: n = 2
            case 0xed: n = 2; upper = 0x9f
            case 0xf0: n = 3; lower = 0x90
            case 0xf1...0xf3: n = 3
            case 0xf4: n = 3; upper = 0x8f
            default: return false
            }
            guard i + n < r.count else { return false }
            guard r[i + 1] >= lower, r[i + 1] <= upper else { return false }
            for k in 2..<(n + 1) { guard r[i + k] & 0xc0 == 0x80 else { return false } }
            i += n + 1
        }
        return true
    }
}
