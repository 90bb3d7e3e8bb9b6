import LocketWire

/// The parameters of one statement, held in PostgreSQL's binary format with
/// their type OIDs, ready for PQexecParams.
struct Parameters {
    private var types: [UInt32] = []
    private var values: [[UInt8]?] = []

    init(_ reader: inout FrameReader, count: Int) throws(Wire.Failure) {
        for _ in 0..<count {
            let tag = try reader.u8()
            switch Wire.ParameterTag(rawValue: tag) {
            case .null: types.append(0); values.append(nil)
            case .bytea: types.append(17); values.append(try reader.field())
            case .text: types.append(25); values.append(try reader.field())
            case .int8: types.append(20); values.append(try reader.raw(8))
            case .bool:
                let value = try reader.u8()
                guard value <= 1 else { throw .malformed("a bool parameter is not 0 or 1") }
                types.append(16); values.append([value])
            case nil: throw .malformed("unknown parameter tag \(tag)")
            }
        }
    }

    /// Calls `body` with the arrays PQexecParams takes; every value in binary format.
    func withPointers<R>(_ body: (UnsafePointer<UInt32>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> R) -> R {
        let lengths = values.map { Int32($0?.count ?? 0) }
        let formats = [Int32](repeating: 1, count: values.count)
        // Each value's bytes stay pinned for the call: copied into one buffer.
        let total = values.reduce(0) { $0 + ($1?.count ?? 0) }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(total, 1), alignment: 1)
        defer {
            storage.initializeMemory(as: UInt8.self, repeating: 0)
            storage.deallocate()
        }
        var pointers: [UnsafePointer<CChar>?] = []
        var offset = 0
        for value in values {
            guard let value else { pointers.append(nil); continue }
            let start = storage.baseAddress! + offset
            value.withUnsafeBytes { start.copyMemory(from: $0.baseAddress ?? UnsafeRawPointer(start), byteCount: $0.count) }
            // A zero-length value still needs a non-NULL pointer, or it would read as NULL.
            pointers.append(UnsafePointer(start.assumingMemoryBound(to: CChar.self)))
            offset += value.count
        }
        return types.withUnsafeBufferPointer { types in
            pointers.withUnsafeBufferPointer { pointers in
                lengths.withUnsafeBufferPointer { lengths in
                    formats.withUnsafeBufferPointer { formats in
                        body(types.baseAddress, pointers.baseAddress, lengths.baseAddress, formats.baseAddress)
                    }
                }
            }
        }
    }

    /// Zeroes the values (sealed items, but still nothing to leave in the heap).
    mutating func wipe() {
        for index in values.indices {
            guard var value = values[index] else { continue }
            for byte in value.indices { value[byte] = 0 }
            values[index] = value
        }
    }
}
