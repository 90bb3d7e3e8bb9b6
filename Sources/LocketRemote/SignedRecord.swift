import LocketCore
import LocketSupport

/// The byte layout shared by what devices sign (the membership, the state
/// of the items, audit entries) and by the local trust file: big-endian
/// integers, byte strings with a 4-byte length. A record that does not
/// parse whole is errSecDecode ("the database was altered").
struct RecordWriter {
    private(set) var bytes: [UInt8] = []
    init(_ magic: String) { bytes = Array(magic.utf8) }
    mutating func int(_ value: Int64) { BigEndian.append(UInt64(bitPattern: value), to: &bytes) }
    mutating func data(_ value: [UInt8]) {
        BigEndian.append(UInt32(value.count), to: &bytes)
        bytes += value
    }
    mutating func string(_ value: String) { data(Array(value.utf8)) }
}

struct RecordReader {
    private let bytes: [UInt8]
    private var at: Int
    private let what: String

    init(_ bytes: [UInt8], magic: String, what: String) throws {
        self.bytes = bytes
        self.what = what
        let label = Array(magic.utf8)
        guard bytes.starts(with: label) else { throw KeychainError(.decode, "\(what) is not one: the database was altered") }
        at = label.count
    }

    private func damaged() -> KeychainError { KeychainError(.decode, "\(what) is truncated or malformed: the database was altered") }

    mutating func int() throws -> Int64 {
        guard let value = BigEndian.read(UInt64.self, bytes, at: at) else { throw damaged() }
        at += 8
        return Int64(bitPattern: value)
    }

    mutating func data(limit: Int = 1 << 20) throws -> [UInt8] {
        guard let count = BigEndian.read(UInt32.self, bytes, at: at), Int(count) <= limit, at + 4 + Int(count) <= bytes.count else { throw damaged() }
        at += 4
        defer { at += Int(count) }
        return Array(bytes[at..<at + Int(count)])
    }

    mutating func data(exactly count: Int) throws -> [UInt8] {
        let value = try data(limit: count)
        guard value.count == count else { throw damaged() }
        return value
    }

    mutating func string() throws -> String {
        let raw = try data(limit: 4096)
        guard let text = String(validating: raw, as: UTF8.self) else { throw damaged() }
        return text
    }

    mutating func count(limit: Int = 1 << 20) throws -> Int {
        let n = try int()
        guard n >= 0, n <= limit else { throw damaged() }
        return Int(n)
    }

    func end() throws { guard at == bytes.count else { throw damaged() } }
}
