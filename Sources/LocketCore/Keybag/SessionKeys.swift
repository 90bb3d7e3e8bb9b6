import LocketSupport

/// Named 32-byte keys, serialized for a session: `header`, timeout (4 bytes),
/// last use (8), count (1), then per key a name length (1), the name, and the key.
package struct SessionKeys {
    static let maximumSize = 32_000
    private(set) var entries: [(name: String, key: SecureBytes)] = []
    /// Set for a session unlocked by an app: its groups, and the classes it holds keys for.
    var scope: Scope?

    struct Scope {
        var groups: [String]
        var classes: Set<String>
    }

    /// The scope block: group count (2), groups (2-byte length + bytes each),
    /// class count (1), classes (1-byte length + bytes each).
    private var encodedScope: [UInt8] {
        guard let scope else { return [] }
        var out: [UInt8] = [UInt8(scope.groups.count >> 8), UInt8(scope.groups.count & 0xff)]
        for group in scope.groups {
            let bytes = Array(group.utf8)
            out += [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xff)] + bytes
        }
        out.append(UInt8(scope.classes.count))
        for name in scope.classes.sorted() { out += [UInt8(name.utf8.count)] + Array(name.utf8) }
        return out
    }

    private static func decodeScope(_ r: UnsafeRawBufferPointer, from start: Int) -> Scope? {
        var i = start
        func take(_ n: Int) -> ArraySlice<UInt8>? {
            guard i + n <= r.count else { return nil }
            defer { i += n }
            return Array(r[i..<i + n])[...]
        }
        guard let countBytes = take(2) else { return nil }
        var groups: [String] = []
        for _ in 0..<(Int(countBytes.first!) << 8 | Int(countBytes.last!)) {
            guard let lengthBytes = take(2), let name = take(Int(lengthBytes.first!) << 8 | Int(lengthBytes.last!)) else { return nil }
            groups.append(String(decoding: name, as: UTF8.self))
        }
        guard let classCount = take(1) else { return nil }
        var classes: Set<String> = []
        for _ in 0..<Int(classCount.first!) {
            guard let length = take(1), let name = take(Int(length.first!)) else { return nil }
            classes.insert(String(decoding: name, as: UTF8.self))
        }
        return i == r.count ? Scope(groups: groups, classes: classes) : nil
    }

    package subscript(_ name: String) -> SecureBytes? { entries.first { $0.name == name }?.key }

    /// Not removeAll(where:), nor growth from one entry: on an array of
    /// tuples the first instantiates generic metadata at run time, and every
    /// command that opens a keychain sets some ten keys (bench/README.md
    /// "A lookup above the process floor").
    mutating func set(_ name: String, _ key: SecureBytes) {
        var k = entries.startIndex
        while k < entries.endIndex {
            if entries[k].name == name { entries.remove(at: k) } else { k += 1 }
        }
        if entries.capacity == 0 { entries.reserveCapacity(16) }
        entries.append((name, key))
    }

    func encode(header: [UInt8], timeout: UInt32, lastUse: Int64) throws -> SecureBytes {
        let scopeBytes = encodedScope
        let size = header.count + 13 + entries.reduce(0) { $0 + 1 + $1.name.utf8.count + 32 } + scopeBytes.count
        let out = try SecureBytes(count: size)
        out.withUnsafeMutableBytes { o in
            var i = 0
            func put(_ b: UInt8) { o[i] = b; i += 1 }
            for b in header { put(b) }
            BigEndian.store(timeout, into: o, at: i); i += 4
            BigEndian.store(lastUse, into: o, at: i); i += 8
            put(UInt8(entries.count))
            for (name, key) in entries {
                put(UInt8(name.utf8.count))
                for b in name.utf8 { put(b) }
                key.withUnsafeBytes { k in for b in k { put(b) } }
            }
            for b in scopeBytes { put(b) }
        }
        return out
    }

    /// The timeout and last use of a record.
    static func header(_ record: SecureBytes, header: [UInt8]) -> (UInt32, Int64)? {
        record.withUnsafeBytes { r -> (UInt32, Int64)? in
            guard r.count >= header.count + 13, Array(r[0..<header.count]) == header else { return nil }
            guard let timeout = BigEndian.read(UInt32.self, r, at: header.count),
                  let lastUse = BigEndian.read(Int64.self, r, at: header.count + 4) else { return nil }
            return (timeout, lastUse)
        }
    }

    /// Overwrites a record's last-use time in place.
    static func stamp(_ record: SecureBytes, header: [UInt8], lastUse: Int64) {
        record.withUnsafeMutableBytes { r in
            guard r.count >= header.count + 13 else { return }
            BigEndian.store(lastUse, into: r, at: header.count + 4)
        }
    }

    static func decode(_ record: SecureBytes, header: [UInt8]) throws -> (SessionKeys, UInt32)? {
        try record.withUnsafeBytes { r -> (SessionKeys, UInt32)? in
            guard r.count >= header.count + 13, Array(r[0..<header.count]) == header else { return nil }
            var i = header.count
            guard let timeout = BigEndian.read(UInt32.self, r, at: i) else { return nil }
            i += 12
            let count = Int(r[i]); i += 1
            var keys = SessionKeys()
            for _ in 0..<count {
                guard i < r.count else { return nil }
                let n = Int(r[i]); i += 1
                guard i + n + 32 <= r.count else { return nil }
                let name = String(decoding: r[i..<i + n], as: UTF8.self)
                i += n
                keys.set(name, try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: r[i..<i + 32])))
                i += 32
            }
            if i == r.count { return (keys, timeout) }
            guard let scope = decodeScope(r, from: i) else { return nil }
            keys.scope = scope
            return (keys, timeout)
        }
    }
}
