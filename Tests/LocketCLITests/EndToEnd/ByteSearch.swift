import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Substring searches over a command's output bytes with memchr and memcmp
/// (the Glibc module does not export memmem): over megabytes of output (nm's
/// ~70,000 symbols of the release binary, a 10,000-item dump) the debug
/// build's String split, contains and components(separatedBy:) cost these
/// tests more CPU than the commands they check.
enum ByteSearch {
    /// Where `needle` starts in `bytes` (offsets from their start), without
    /// overlaps; the first `limit` of them.
    static func offsets<Bytes: ContiguousBytes>(of needle: [UInt8], in bytes: Bytes, limit: Int = .max) -> [Int] {
        bytes.withUnsafeBytes { all in
            var found: [Int] = []
            guard let base = all.baseAddress, !needle.isEmpty else { return found }
            needle.withUnsafeBytes { pattern in
                var from = 0
                while found.count < limit, from + pattern.count <= all.count,
                      let hit = memchr(base + from, Int32(needle[0]), all.count - from - pattern.count + 1) {
                    let at = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + at, pattern.baseAddress!, pattern.count) == 0 {
                        found.append(at)
                        from = at + pattern.count
                    } else {
                        from = at + 1
                    }
                }
            }
            return found
        }
    }

    static func offsets<Bytes: ContiguousBytes>(of needle: String, in bytes: Bytes, limit: Int = .max) -> [Int] {
        offsets(of: Array(needle.utf8), in: bytes, limit: limit)
    }

    /// The lines of `text` (without their line feed) that contain one of `needles`, in order, each once.
    static func lines(of text: [UInt8], containing needles: [String]) -> [String] {
        var found: [Int: String] = [:]
        for needle in needles {
            for at in offsets(of: needle, in: text) {
                let start = (text[..<at].lastIndex(of: 0x0a) ?? -1) + 1
                guard found[start] == nil else { continue }
                let end = text[at...].firstIndex(of: 0x0a) ?? text.count
                found[start] = String(decoding: text[start..<end], as: UTF8.self)
            }
        }
        return found.keys.sorted().map { found[$0]! }
    }
}
