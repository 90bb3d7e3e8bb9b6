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
    /// Where `needle` starts in `bytes` (offsets from their start), without overlaps.
    static func offsets<Bytes: ContiguousBytes>(of needle: String, in bytes: Bytes) -> [Int] {
        let pattern = Array(needle.utf8)
        return bytes.withUnsafeBytes { all in
            var found: [Int] = []
            guard let base = all.baseAddress, !pattern.isEmpty else { return found }
            pattern.withUnsafeBytes { needle in
                var from = 0
                while from + needle.count <= all.count,
                      let hit = memchr(base + from, Int32(pattern[0]), all.count - from - needle.count + 1) {
                    let at = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + at, needle.baseAddress!, needle.count) == 0 {
                        found.append(at)
                        from = at + needle.count
                    } else {
                        from = at + 1
                    }
                }
            }
            return found
        }
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
