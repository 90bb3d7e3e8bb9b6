import LocketSupport

/// One keychain item as a backup carries it: everything `import` needs to
/// recreate the item on another device, with its reference and dates.
public struct BackupRecord: Sendable {
    /// The item class (genp, inet; the key and certificate classes when they come).
    public var itemClass: ItemClass
    /// The protection class; never a ThisDeviceOnly one in a backup.
    public var accessible: ProtectionClass
    /// The access group the item belongs to.
    public var accessGroup: String
    /// Opaque; kept so that references saved elsewhere still find the item.
    public var persistentRef: [UInt8]
    /// Milliseconds since 1970.
    public var creationDate: Int64
    /// Milliseconds since 1970.
    public var modificationDate: Int64
    /// Attribute values by attribute; an absent key means the empty value.
    /// Access group and accessible are the fields above, never in here.
    public var attributes: [Attribute: [UInt8]]
    /// The secret.
    public var data: SecureBytes
    /// Metadata sealed with the secret (the git credential helper's fields).
    public var extra: SecureBytes?
    /// Free-form attributes, content type and uniqueness of an item made
    /// over the Secret Service (SPEC §18); empty for every other item.
    public var freeForm = FreeForm()
    /// Four-char codes of attributes in the backup that this locket does not
    /// know and that the writer marked optional: they were left out (see
    /// BackupFormat.md, "Attributes"). Empty for every backup this locket writes.
    public var skippedAttributeCodes: [String] = []

    /// A record with every field given.
    public init(itemClass: ItemClass, accessible: ProtectionClass, accessGroup: String, persistentRef: [UInt8],
                creationDate: Int64, modificationDate: Int64, attributes: [Attribute: [UInt8]],
                data: SecureBytes, extra: SecureBytes? = nil) {
        self.itemClass = itemClass
        self.accessible = accessible
        self.accessGroup = accessGroup
        self.persistentRef = persistentRef
        self.creationDate = creationDate
        self.modificationDate = modificationDate
        self.attributes = attributes
        self.data = data
        self.extra = extra
    }

    /// The record of a stored item whose secret was read (`returnData`).
    public init(item: Item, data: SecureBytes) {
        self.init(itemClass: item.itemClass, accessible: item.accessible, accessGroup: item.accessGroup,
                  persistentRef: item.persistentRef, creationDate: item.creationDate,
                  modificationDate: item.modificationDate, attributes: item.attributes, data: data, extra: item.extra)
        freeForm = item.freeForm
    }

    /// Why a backup can't carry this record (`BackupWriter.append` would
    /// refuse it), nil when it can. An item stored before every path into
    /// the engine checked sizes (a 70,000-byte label from the Secret
    /// Service) is one: `export` leaves it out and says so rather than fail
    /// the whole backup.
    public var whyNotBackedUp: String? {
        do {
            try BackupRecordCoding.validate(self)
            return nil
        } catch let error as KeychainError {
            return error.message
        } catch {
            return "\(error)"
        }
    }
}

/// The byte layout of a record inside the decrypted stream (BackupFormat.md, "Records").
enum BackupRecordCoding {
    static let kindItem: UInt8 = 1
    /// An item with free-form attributes: kind 1's fields, then its FreeForm
    /// record. A reader that knows only kind 1 refuses it as newer rather
    /// than drop the attributes a Secret Service client finds the item by.
    static let kindItemWithFreeForm: UInt8 = 2
    static let flagRequired: UInt8 = 1
    /// The largest record body a reader accepts: the largest secret, every
    /// attribute at its largest, and room for classes yet to come.
    static let maximumRecordLength = Keychain.maximumDataLength + 4 * 1024 * 1024

    /// Four-char codes as big-endian integers, for lookups without strings.
    static func fourCC(_ text: String) -> UInt32 {
        text.utf8.reduce(0) { $0 << 8 | UInt32($1) }
    }

    static let attributeCodes: [UInt32] = Attribute.allCases.map { fourCC($0.code) }
    static let attributesByCode: [UInt32: Attribute] = Dictionary(uniqueKeysWithValues: Attribute.allCases.map { (fourCC($0.code), $0) })
    static let classCodes: [(UInt32, ItemClass)] = ItemClass.allCases.map { (fourCC($0.rawValue), $0) }
    static let protectionCodes: [([UInt8], ProtectionClass)] = ProtectionClass.allCases.map { (Array($0.rawValue.utf8), $0) }

    /// Checks what a writer must never put in a backup; errSecParam names the problem.
    static func validate(_ record: BackupRecord) throws {
        func bad(_ why: String) -> KeychainError { KeychainError(.param, "a \(record.itemClass.name) item can't be backed up: \(why)") }
        // The exporter leaves these out; refusing here too means no bug upstream can carry one off the device.
        guard !record.accessible.thisDeviceOnly else { throw bad("its protection class \(record.accessible.name) never leaves this device") }
        guard record.data.count <= Keychain.maximumDataLength else { throw bad("its secret is larger than \(ByteSize.text(Keychain.maximumDataLength))") }
        guard record.accessGroup.utf8.count <= 0xffff else { throw bad("its access group is too long") }
        guard record.persistentRef.count <= 0xff else { throw bad("its persistent reference is too long") }
        guard (record.extra?.count ?? 0) <= Keychain.maximumDataLength else { throw bad("its secret's metadata is too large") }
        do { try record.freeForm.validate() } catch let error as KeychainError { throw bad(error.message) }
        if !record.freeForm.isEmpty && record.itemClass != .genericPassword { throw bad("only generic passwords have free-form attributes") }
        for (attribute, value) in record.attributes {
            guard attribute != .accessGroup, attribute != .accessible else { throw bad("\(attribute.longName) is given as an attribute") }
            guard record.itemClass.supports(attribute) else { throw bad("it has a \(attribute.longName) attribute") }
            guard value.count <= Attribute.maximumValueLength else { throw bad("its \(attribute.longName) is too long") }
        }
    }

    /// The record's FreeForm field (kind 2 only): its length and bytes, as
    /// the item's own record keeps them (BackupFormat.md, "Free-form attributes").
    static func encodeFreeForm(_ record: BackupRecord) -> [UInt8]? {
        guard !record.freeForm.isEmpty else { return nil }
        let encoded = record.freeForm.encoded()
        var out: [UInt8] = []
        out.reserveCapacity(4 + encoded.count)
        BigEndian.append(UInt32(encoded.count), to: &out)
        out.append(contentsOf: encoded)
        return out
    }

    /// Appends the record's head (everything before the secret, starting with
    /// the body length) to `out`. The secret, its metadata and `freeForm`
    /// (encodeFreeForm's bytes, which make the record kind 2) follow it.
    static func encodeHead(_ record: BackupRecord, freeForm: [UInt8]? = nil, into out: inout [UInt8]) {
        // The record's own attributes (a handful), put in the format's order
        // (Attribute.allCases): looking every attribute up in the record, twice,
        // cost a hash per attribute there is for every record written.
        var present: [(position: Int, value: [UInt8])] = []
        present.reserveCapacity(record.attributes.count)
        var attributeBytes = 0
        for (attribute, value) in record.attributes where !value.isEmpty {
            present.append((attributePositions[Int(attribute.rawValue)], value))
            attributeBytes += 9 + value.count
        }
        present.sort { $0.position < $1.position }
        let pdmn = record.accessible.rawValue.utf8
        let group = record.accessGroup.utf8
        let extraBytes = record.extra.map { 4 + $0.count } ?? 0
        let body: Int = 1 + 4 + 1 + pdmn.count + 2 + group.count + 1 + record.persistentRef.count + 16 + 2 + attributeBytes
            + 4 + record.data.count + 1 + extraBytes + (freeForm?.count ?? 0)
        BigEndian.append(UInt32(body), to: &out)
        out.append(freeForm == nil ? kindItem : kindItemWithFreeForm)
        BigEndian.append(fourCC(record.itemClass.rawValue), to: &out)
        out.append(UInt8(pdmn.count))
        out.append(contentsOf: pdmn)
        out.append(UInt8(group.count >> 8)); out.append(UInt8(truncatingIfNeeded: group.count))
        out.append(contentsOf: group)
        out.append(UInt8(record.persistentRef.count))
        out.append(contentsOf: record.persistentRef)
        put64(UInt64(bitPattern: record.creationDate), &out)
        put64(UInt64(bitPattern: record.modificationDate), &out)
        out.append(UInt8(present.count >> 8)); out.append(UInt8(truncatingIfNeeded: present.count))
        let primaryKey = record.itemClass.primaryKey
        for (position, value) in present {
            let attribute = Attribute.allCases[position]
            BigEndian.append(attributeCodes[position], to: &out)
            // Synchronizable is part of every class's primary key (SPEC §4).
            out.append(primaryKey.contains(attribute) || attribute == .synchronizable ? flagRequired : 0)
            BigEndian.append(UInt32(value.count), to: &out)
            out.append(contentsOf: value)
        }
        BigEndian.append(UInt32(record.data.count), to: &out)
    }

    /// Each attribute's place in Attribute.allCases (the order records list them in), by raw value.
    static let attributePositions: [Int] = {
        var positions = [Int](repeating: 0, count: 256)
        for (i, attribute) in Attribute.allCases.enumerated() { positions[Int(attribute.rawValue)] = i }
        return positions
    }()

    static func put64(_ v: UInt64, _ out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }

    /// Decodes one record body (authenticated already: a failure here is a
    /// writer from a newer locket, or a bug, never tampering).
    static func decode(_ r: UnsafeRawBufferPointer, number: Int) throws -> BackupRecord {
        var cursor = Cursor(r, number: number)
        let kind = try cursor.byte()
        guard kind == kindItem || kind == kindItemWithFreeForm else { throw cursor.newer("a record of kind \(kind)") }
        let classCode = try cursor.u32()
        guard let itemClass = classCodes.first(where: { $0.0 == classCode })?.1 else {
            throw cursor.newer("the item class '\(Printable.clip(String(decoding: withUnsafeBytes(of: classCode.bigEndian) { Array($0) }, as: UTF8.self)))'")
        }
        let pdmn = try cursor.bytes(Int(try cursor.byte()))
        guard let accessible = protectionCodes.first(where: { $0.0.elementsEqual(pdmn) })?.1 else {
            throw cursor.newer("the protection class '\(Printable.clip(String(decoding: pdmn, as: UTF8.self)))'")
        }
        let groupBytes = try cursor.bytes(Int(try cursor.u16()))
        guard let accessGroup = String(validating: groupBytes, as: UTF8.self) else { throw cursor.malformed("its access group is not UTF-8") }
        let persistentRef = Array(try cursor.bytes(Int(try cursor.byte())))
        let created = Int64(bitPattern: try cursor.u64())
        let modified = Int64(bitPattern: try cursor.u64())
        let count = Int(try cursor.u16())
        var attributes = [Attribute: [UInt8]](minimumCapacity: count)
        var skipped: [String] = []
        for _ in 0..<count {
            let code = try cursor.u32()
            let flags = try cursor.byte()
            let length = Int(try cursor.u32())
            guard length <= Attribute.maximumValueLength else { throw cursor.malformed("an attribute is longer than \(ByteSize.text(Attribute.maximumValueLength))") }
            let value = try cursor.bytes(length)
            guard let attribute = attributesByCode[code], attribute != .accessGroup, attribute != .accessible else {
                // Unknown to this locket: optional ones are left out, required ones refuse the backup.
                let name = String(decoding: withUnsafeBytes(of: code.bigEndian) { Array($0) }, as: UTF8.self)
                if flags & flagRequired != 0 { throw cursor.newer("the attribute '\(Printable.clip(name))'") }
                skipped.append(Printable.clip(name))
                continue
            }
            guard itemClass.supports(attribute) else { throw cursor.malformed("a \(itemClass.name) item has a \(attribute.longName) attribute") }
            guard attributes[attribute] == nil else { throw cursor.malformed("the \(attribute.longName) attribute appears twice") }
            if !value.isEmpty { attributes[attribute] = Array(value) }
        }
        let dataLength = Int(try cursor.u32())
        guard dataLength <= Keychain.maximumDataLength else { throw cursor.malformed("its secret is larger than \(ByteSize.text(Keychain.maximumDataLength))") }
        let data = try SecureBytes(copying: try cursor.bytes(dataLength))
        var extra: SecureBytes?
        switch try cursor.byte() {
        case 0: break
        case 1:
            let n = Int(try cursor.u32())
            extra = try SecureBytes(copying: try cursor.bytes(n))
        default: throw cursor.malformed("its metadata flag is neither 0 nor 1")
        }
        var freeForm = FreeForm()
        if kind == kindItemWithFreeForm {
            let field = Array(try cursor.bytes(Int(try cursor.u32())))
            do {
                freeForm = try FreeForm(encoded: field)
                try freeForm.validate()
            } catch let error as KeychainError {
                throw cursor.malformed("its free-form attributes: \(error.message)")
            }
            guard itemClass == .genericPassword, !freeForm.isEmpty else { throw cursor.malformed("it has free-form attributes it can't have") }
        }
        guard cursor.atEnd else { throw cursor.malformed("bytes follow its last field") }
        var record = BackupRecord(itemClass: itemClass, accessible: accessible, accessGroup: accessGroup,
                                  persistentRef: persistentRef, creationDate: created, modificationDate: modified,
                                  attributes: attributes, data: data, extra: extra)
        record.skippedAttributeCodes = skipped
        record.freeForm = freeForm
        return record
    }

    /// Reads big-endian fields from a record body, failing past its end.
    private struct Cursor {
        let r: UnsafeRawBufferPointer
        let number: Int
        var i = 0

        init(_ r: UnsafeRawBufferPointer, number: Int) {
            self.r = r
            self.number = number
        }

        var atEnd: Bool { i == r.count }

        func malformed(_ why: String) -> KeychainError {
            KeychainError(.decode, "record \(number) of the backup is malformed: \(why)")
        }

        func newer(_ what: String) -> KeychainError {
            KeychainError(.decode, "record \(number) of the backup has \(what), which this locket does not know: the backup was made by a newer locket")
        }

        mutating func bytes(_ n: Int) throws -> UnsafeRawBufferPointer {
            guard n >= 0, n <= r.count - i else { throw malformed("a field runs past its end") }
            defer { i += n }
            return UnsafeRawBufferPointer(rebasing: r[i..<(i + n)])
        }

        mutating func byte() throws -> UInt8 { try bytes(1)[0] }

        mutating func u16() throws -> UInt16 {
            UInt16(BigEndian.value(try bytes(2)))
        }

        mutating func u32() throws -> UInt32 {
            UInt32(BigEndian.value(try bytes(4)))
        }

        mutating func u64() throws -> UInt64 {
            let b = try bytes(8)
            return b.reduce(0) { $0 << 8 | UInt64($1) }
        }
    }
}
