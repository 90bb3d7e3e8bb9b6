import LocketSupport

/// The sealed attribute record of an item: a version byte, then per non-empty
/// attribute a tag (1 byte), a length (4 bytes, big-endian) and the value,
/// then the creation and modification dates (8 bytes each, milliseconds).
enum ItemRecord {
    private static let version: UInt8 = 1
    private static let creationTag: UInt8 = 0xf0
    private static let modificationTag: UInt8 = 0xf1
    /// The item's access control (ItemAccess), when it has one; records
    /// without it (every item before SPEC §14) have none.
    private static let accessTag: UInt8 = 0xf2
    /// Free-form attributes, content type and uniqueness (FreeForm), when the
    /// item has any (SPEC §18); a release before it reads such a record as
    /// malformed (errSecDecode), never as something else.
    private static let freeFormTag: UInt8 = 0xf3

    static func encode(_ attributes: [Attribute: [UInt8]], created: Int64, modified: Int64, access: [UInt8]? = nil,
                       freeForm: FreeForm? = nil) -> [UInt8] {
        let free = freeForm.flatMap { $0.isEmpty ? nil : $0.encoded() }
        // In tag order, from the dictionary's few entries: probing it for
        // each of the ~46 attributes hashed every one of them, per item.
        var present: [(tag: UInt8, value: [UInt8])] = []
        present.reserveCapacity(attributes.count)
        var size = 1 + 2 * 9 + (access.map { 5 + $0.count } ?? 0) + (free.map { 5 + $0.count } ?? 0)
        for (attribute, value) in attributes where attribute.isSealed && !value.isEmpty {
            present.append((attribute.rawValue, value))
            size += 5 + value.count
        }
        present.sort { $0.tag < $1.tag }
        var out: [UInt8] = []
        out.reserveCapacity(size)
        out.append(version)
        for (tag, value) in present {
            out.append(tag)
            BigEndian.append(UInt32(value.count), to: &out)
            out.append(contentsOf: value)
        }
        for (tag, date) in [(creationTag, created), (modificationTag, modified)] {
            out.append(tag)
            BigEndian.append(date, to: &out)
        }
        if let access {
            out.append(accessTag)
            BigEndian.append(UInt32(access.count), to: &out)
            out.append(contentsOf: access)
        }
        if let free {
            out.append(freeFormTag)
            BigEndian.append(UInt32(free.count), to: &out)
            out.append(contentsOf: free)
        }
        return out
    }

    /// Decodes a record; anything unexpected is errSecDecode (the MAC already
    /// passed, so this only fires on a format bug or a future version).
    /// (The free-form field is skipped here and read by `freeForm`: a fifth
    /// element of a type of its own made this tuple's type metadata a run-time
    /// instantiation on every lookup, about 2 % of a `find`.)
    static func decode(_ record: SecureBytes) throws -> (attributes: [Attribute: [UInt8]], created: Int64, modified: Int64, access: [UInt8]?) {
        try record.withUnsafeBytes { r in
            var bad: KeychainError { KeychainError(.decode, "an item's attribute record is malformed") }
            guard r.count >= 1, r[0] == version else { throw bad }
            var i = 1
            // Sized for every sealed attribute up front: growing it twice per item was 4 % of a dump.
            var attributes = [Attribute: [UInt8]](minimumCapacity: 16)
            var created: Int64?, modified: Int64?
            var access: [UInt8]?
            while i < r.count {
                let tag = r[i]; i += 1
                if tag == creationTag || tag == modificationTag {
                    guard let v = BigEndian.read(Int64.self, r, at: i) else { throw bad }
                    if tag == creationTag { created = v } else { modified = v }
                    i += 8
                    continue
                }
                if tag == accessTag || tag == freeFormTag {
                    guard let n = BigEndian.read(UInt32.self, r, at: i).map(Int.init), n <= r.count - i - 4 else { throw bad }
                    if tag == accessTag { access = Array(r[i + 4..<i + 4 + n]) }
                    i += 4 + n
                    continue
                }
                guard let attribute = Attribute(rawValue: tag), attribute.isSealed,
                      let n = BigEndian.read(UInt32.self, r, at: i).map(Int.init) else { throw bad }
                i += 4
                guard n <= r.count - i else { throw bad }
                attributes[attribute] = Array(UnsafeRawBufferPointer(rebasing: r[i..<i + n]))
                i += n
            }
            guard let created, let modified else { throw bad }
            return (attributes, created, modified, access)
        }
    }

    /// The free-form field of a record (SPEC §18), empty when it has none;
    /// a walk over the tags, decoded only where the field is.
    static func freeForm(_ record: SecureBytes) throws -> FreeForm {
        let field: [UInt8]? = try record.withUnsafeBytes { r in
            var i = 1
            while i < r.count {
                let tag = r[i]; i += 1
                if tag == creationTag || tag == modificationTag { i += 8; continue }
                guard let n = BigEndian.read(UInt32.self, r, at: i).map(Int.init), n <= r.count - i - 4 else {
                    throw KeychainError(.decode, "an item's attribute record is malformed")
                }
                if tag == freeFormTag { return Array(r[i + 4..<i + 4 + n]) }
                i += 4 + n
            }
            return nil
        }
        return try field.map { try FreeForm(encoded: $0) } ?? FreeForm()
    }
}
