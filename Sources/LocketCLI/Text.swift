/// Checks on bytes that must be text, done in place: making a String of a
/// secret to validate it would leave an unwiped copy behind.
enum Text {
    /// Whether `bytes` is well-formed UTF-8 (no overlong forms, surrogates or
    /// values past U+10FFFF) without NUL.
    static func isText(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        let n = bytes.count
        while i < n {
            let b = bytes[i]
            if b == 0 { return false }
            if b < 0x80 { i += 1; continue }
            let length: Int
            var low: UInt8 = 0x80, high: UInt8 = 0xbf
            switch b {
            case 0xc2...0xdf: length = 2
            case 0xe0: length = 3; low = 0xa0
            case 0xe1...0xec, 0xee...0xef: length = 3
            case 0xed: length = 3; high = 0x9f
            case 0xf0: length = 4; low = 0x90
            case 0xf1...0xf3: length = 4
            case 0xf4: length = 4; high = 0x8f
            default: return false
            }
            guard i + length <= n else { return false }
            guard (low...high).contains(bytes[i + 1]) else { return false }
            for k in 2..<max(2, length) where !(0x80...0xbf).contains(bytes[i + k]) { return false }
            i += length
        }
        return true
    }
}
