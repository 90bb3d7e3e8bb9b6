import LocketSupport

/// A strict parser for Apple's binary property lists (`bplist0?`): the
/// trailer, the whole offset table and every object reachable from the top
/// one are checked, each count, offset and reference against the bytes
/// really there, so a forged count allocates nothing and a forged offset or
/// reference reads nothing out of bounds. Strings (ASCII and UTF-16BE),
/// arrays and dictionaries are read; the other types (null, booleans,
/// integers, reals, dates, data, UIDs, sets) are bounds-checked and skipped.
///
/// Refused as well: reference cycles; nesting deeper than
/// `DocumentValue.maximumDepth`, shared objects included; and two equal keys
/// in one dictionary, of which Foundation's PropertyListDecoder, used before,
/// kept whichever its own hashed dictionary listed first: a different one
/// from run to run.
struct BinaryPropertyList {
    private let bytes: [UInt8]
    /// Objects lie between the 8-byte header and the offset table, which starts here.
    private let objectsEnd: Int
    private let offsetSize: Int
    private let referenceSize: Int
    private let objectCount: Int
    /// Objects already read, each with the number of nested containers in
    /// it (0 for scalars): an object referenced twice is read once, and
    /// reused deeper in the tree it still counts toward the depth limit.
    private var parsed: [Int: (value: DocumentValue, height: Int)] = [:]
    /// Containers being read: meeting one of them again is a cycle.
    private var open: Set<Int> = []

    private init(bytes: [UInt8], objectsEnd: Int, offsetSize: Int, referenceSize: Int, objectCount: Int) {
        self.bytes = bytes
        self.objectsEnd = objectsEnd
        self.offsetSize = offsetSize
        self.referenceSize = referenceSize
        self.objectCount = objectCount
    }

    /// Parses a whole binary property list.
    static func parse(_ bytes: [UInt8]) throws -> DocumentValue {
        // The header, at least one byte of objects, and the 32-byte trailer.
        guard bytes.count >= 8 + 1 + 32, bytes.starts(with: "bplist0".utf8) else { throw MalformedDocument() }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6])
        let referenceSize = Int(bytes[trailer + 7])
        let objectCount = bigEndian(bytes, at: trailer + 8, size: 8)
        let top = bigEndian(bytes, at: trailer + 16, size: 8)
        let tableStart = bigEndian(bytes, at: trailer + 24, size: 8)
        // In this order, so that each product and sum is known not to overflow.
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize),
              objectCount >= 1, top < objectCount, objectCount <= UInt64(trailer),
              tableStart >= 9, tableStart < UInt64(trailer),
              // One offset per object, and the table ends where the trailer starts.
              tableStart + objectCount * UInt64(offsetSize) == UInt64(trailer),
              // As Foundation did, refuse references and offsets too narrow to reach every object.
              referenceSize == 8 || objectCount < 1 << (8 * referenceSize),
              offsetSize == 8 || tableStart < 1 << (8 * offsetSize)
        else { throw MalformedDocument() }
        var parser = BinaryPropertyList(bytes: bytes, objectsEnd: Int(tableStart), offsetSize: offsetSize,
                                        referenceSize: referenceSize, objectCount: Int(objectCount))
        for object in 0..<parser.objectCount {
            let offset = bigEndian(bytes, at: parser.objectsEnd + object * offsetSize, size: offsetSize)
            guard offset >= 8, offset < tableStart else { throw MalformedDocument() }
        }
        return try parser.object(Int(top), level: 0).value
    }

    /// Object `reference` with its height; `level` counts the containers
    /// around it. The marker's high nibble is the type: 0 null (0x00),
    /// false (0x08), true (0x09); 1 an integer of 2^n bytes (n ≤ 4); 2 a
    /// real of 4 or 8 bytes; 3 a date (0x33, 8 bytes); 4 data; 5 an ASCII
    /// string; 6 a UTF-16BE string; 8 a UID of n + 1 bytes; A an array;
    /// C a set; D a dictionary, all the key references then all the values'.
    private mutating func object(_ reference: Int, level: Int) throws -> (value: DocumentValue, height: Int) {
        if let known = parsed[reference] {
            guard level + known.height <= DocumentValue.maximumDepth else { throw MalformedDocument() }
            return known
        }
        // Checked against the table's bounds when the table was read.
        let start = Int(Self.bigEndian(bytes, at: objectsEnd + reference * offsetSize, size: offsetSize))
        let marker = bytes[start]
        let low = Int(marker & 0x0f)
        var cursor = start + 1
        var result: (value: DocumentValue, height: Int) = (.other, 0)
        switch marker >> 4 {
        case 0x0:
            // Foundation refused the other markers, fill byte 0x0f included.
            guard marker == 0x00 || marker == 0x08 || marker == 0x09 else { throw MalformedDocument() }
            if marker == 0x00 { result.value = .null }
        case 0x1:
            guard low <= 4 else { throw MalformedDocument() }
            _ = try take(1 << low, at: &cursor)
        case 0x2:
            guard low == 2 || low == 3 else { throw MalformedDocument() }
            _ = try take(1 << low, at: &cursor)
        case 0x3:
            guard marker == 0x33 else { throw MalformedDocument() }
            _ = try take(8, at: &cursor)
        case 0x4:
            let length = try count(low, at: &cursor)
            _ = try take(length, at: &cursor)
        case 0x5:
            let length = try count(low, at: &cursor)
            let range = try take(length, at: &cursor)
            guard bytes[range].allSatisfy({ $0 < 0x80 }) else { throw MalformedDocument() }
            result.value = .string(String(decoding: bytes[range], as: UTF8.self))
        case 0x6:
            let length = try count(low, at: &cursor)
            let range = try take(2 * length, at: &cursor)
            let units = stride(from: range.lowerBound, to: range.upperBound, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
            // Nil for a lone surrogate.
            guard let string = String(validating: units, as: UTF16.self) else { throw MalformedDocument() }
            result.value = .string(string)
        case 0x8:
            _ = try take(low + 1, at: &cursor)
        case 0xa, 0xc:
            let length = try count(low, at: &cursor)
            let children = try contents(of: reference, references(length, at: &cursor), level: level)
            result = (marker >> 4 == 0xa ? .array(children.values) : .other, children.height)
        case 0xd:
            let pairs = try count(low, at: &cursor)
            let children = try contents(of: reference, references(2 * pairs, at: &cursor), level: level)
            var entries: [String: DocumentValue] = [:]
            var stringKeys = true
            for i in 0..<pairs {
                guard case .string(let key) = children.values[i] else {
                    stringKeys = false
                    continue
                }
                guard entries.updateValue(children.values[pairs + i], forKey: key) == nil else { throw MalformedDocument() }
            }
            // Foundation did not read a dictionary with a key that is not a string as a dictionary.
            result = (stringKeys ? .dictionary(entries) : .other, children.height)
        default:
            throw MalformedDocument()
        }
        parsed[reference] = result
        return result
    }

    /// The objects a container at `level` refers to, and the container's height.
    private mutating func contents(of container: Int, _ references: [Int], level: Int) throws -> (values: [DocumentValue], height: Int) {
        guard level < DocumentValue.maximumDepth, open.insert(container).inserted else { throw MalformedDocument() }
        var values: [DocumentValue] = []
        values.reserveCapacity(references.count)
        var height = 0
        for reference in references {
            let child = try object(reference, level: level + 1)
            values.append(child.value)
            height = max(height, child.height)
        }
        open.remove(container)
        return (values, height + 1)
    }

    /// `count` object references at `cursor`, each checked to name an object.
    private func references(_ count: Int, at cursor: inout Int) throws -> [Int] {
        let range = try take(count * referenceSize, at: &cursor)
        return try stride(from: range.lowerBound, to: range.upperBound, by: referenceSize).map { position in
            let reference = Self.bigEndian(bytes, at: position, size: referenceSize)
            guard reference < objectCount else { throw MalformedDocument() }
            return Int(reference)
        }
    }

    /// An object's count: the marker's low nibble, or when that is 0xf the
    /// integer object (1, 2, 4 or 8 bytes) that follows the marker.
    private func count(_ low: Int, at cursor: inout Int) throws -> Int {
        guard low == 0x0f else { return low }
        let marker = bytes[try take(1, at: &cursor).lowerBound]
        guard marker >> 4 == 0x1, marker & 0x0f <= 3 else { throw MalformedDocument() }
        let range = try take(1 << Int(marker & 0x0f), at: &cursor)
        let value = Self.bigEndian(bytes, at: range.lowerBound, size: range.count)
        // Nothing holds more elements than the file has bytes; the bound
        // also keeps the callers' multiplications from overflowing.
        guard value <= UInt64(bytes.count) else { throw MalformedDocument() }
        return Int(value)
    }

    /// The next `count` bytes of the object at `cursor`, which must end
    /// before the offset table.
    private func take(_ count: Int, at cursor: inout Int) throws -> Range<Int> {
        guard count <= objectsEnd - cursor else { throw MalformedDocument() }
        defer { cursor += count }
        return cursor..<cursor + count
    }

    /// The unsigned big-endian integer of `size` (at most 8) bytes at `position`.
    private static func bigEndian(_ bytes: [UInt8], at position: Int, size: Int) -> UInt64 {
        BigEndian.value(bytes[position..<position + size])
    }
}
