import LocketSupport

/// What an item carries beyond Apple's fixed attributes (SPEC §18): the
/// Secret Service's free-form attributes (`xdg:schema`, `application`,
/// anything a client names), the content type of its secret, and whether it
/// is unique by its attributes as SecItem items are or by its reference alone
/// (an item made over the Secret Service, which has no uniqueness rule:
/// clients create two items with the same attributes and expect two).
///
/// Kept sealed in the item's attribute record (ItemRecord tag 0xf3) and
/// indexed like every attribute: one blind row per (name, value) pair, a
/// keyed digest under its own label, so that a grep of the file finds no
/// name and no value and a search matches by exact equality only.
public struct FreeForm: Sendable, Equatable {
    /// Free-form attributes by name. An attribute with an empty value is
    /// present, and differs from an absent one (as in the Secret Service).
    public var attributes: [String: String]
    /// The secret's MIME type as its writer gave it; nil: not given (text/plain).
    public var contentType: String?
    /// Unique by persistent reference rather than by the class's primary key.
    public var uniqueByReference: Bool
    /// Whether an empty `service` or `username` its client gave is kept here
    /// as a free-form attribute of that name (FreeFormMapping): true for
    /// what the Secret Service writes since issue 44. Without it (an item
    /// made before, or by `add`), an empty one may have been given and
    /// dropped, so it reads as present and as absent alike.
    public var keepsEmptyMapped: Bool

    public init(attributes: [String: String] = [:], contentType: String? = nil, uniqueByReference: Bool = false,
                keepsEmptyMapped: Bool = false) {
        self.attributes = attributes
        self.contentType = contentType
        self.uniqueByReference = uniqueByReference
        self.keepsEmptyMapped = keepsEmptyMapped
    }

    /// Nothing beyond Apple's attributes: such an item's record has no 0xf3 field.
    public var isEmpty: Bool { attributes.isEmpty && contentType == nil && !uniqueByReference && !keepsEmptyMapped }

    /// The most free-form attributes an item may have, and the longest name.
    public static let maximumCount = 1_000
    public static let maximumNameLength = 1_024

    /// Refuses what could not be stored or searched: too many attributes, a
    /// name or value too long (errSecDataTooLarge), an empty name (errSecParam).
    public func validate() throws {
        guard attributes.count <= FreeForm.maximumCount else {
            throw KeychainError(.dataTooLarge, "an item has more than \(FreeForm.maximumCount) free-form attributes")
        }
        for (name, value) in attributes {
            guard !name.isEmpty else { throw KeychainError(.param, "a free-form attribute has an empty name") }
            guard name.utf8.count <= FreeForm.maximumNameLength else {
                throw KeychainError(.dataTooLarge, "a free-form attribute name is longer than \(ByteSize.text(FreeForm.maximumNameLength))")
            }
            guard value.utf8.count <= Attribute.maximumValueLength else {
                throw KeychainError(.dataTooLarge, "the free-form attribute '\(Printable.clip(name))' is longer than \(ByteSize.text(Attribute.maximumValueLength))")
            }
        }
        if let contentType, contentType.utf8.count > FreeForm.maximumNameLength {
            throw KeychainError(.dataTooLarge, "the content type is longer than \(ByteSize.text(FreeForm.maximumNameLength))")
        }
    }

    /// The pairs in name order (the record's order, and the digests').
    var sortedPairs: [(name: String, value: String)] {
        attributes.map { (name: $0.key, value: $0.value) }.sorted { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
    }

    // MARK: - The record

    private static let version: UInt8 = 1
    private static let uniqueByReferenceFlag: UInt8 = 1
    private static let contentTypeFlag: UInt8 = 2
    /// An older release ignores it (and drops it when it re-encodes): the item then reads as made before.
    private static let keepsEmptyMappedFlag: UInt8 = 4

    /// `version | flags | [content type: u32 length, bytes] | count u32 | (name, value)*`, each a u32 length and bytes.
    func encoded() -> [UInt8] {
        var out: [UInt8] = [FreeForm.version, (uniqueByReference ? FreeForm.uniqueByReferenceFlag : 0) | (contentType != nil ? FreeForm.contentTypeFlag : 0)
                                                | (keepsEmptyMapped ? FreeForm.keepsEmptyMappedFlag : 0)]
        func field(_ text: String) {
            BigEndian.append(UInt32(text.utf8.count), to: &out)
            out.append(contentsOf: text.utf8)
        }
        if let contentType { field(contentType) }
        BigEndian.append(UInt32(attributes.count), to: &out)
        for (name, value) in sortedPairs {
            field(name)
            field(value)
        }
        return out
    }

    /// Decodes a record field; anything unexpected is errSecDecode.
    init(encoded r: [UInt8]) throws {
        let bad = KeychainError(.decode, "an item's free-form attributes are malformed")
        guard r.count >= 6, r[0] == FreeForm.version else { throw bad }
        var i = 2
        func field() throws -> String {
            guard let n = BigEndian.read(UInt32.self, r, at: i).map(Int.init), n <= r.count - i - 4 else { throw bad }
            defer { i += 4 + n }
            guard let text = String(validating: r[(i + 4)..<(i + 4 + n)], as: UTF8.self) else { throw bad }
            return text
        }
        let flags = r[1]
        uniqueByReference = flags & FreeForm.uniqueByReferenceFlag != 0
        keepsEmptyMapped = flags & FreeForm.keepsEmptyMappedFlag != 0
        contentType = flags & FreeForm.contentTypeFlag != 0 ? try field() : nil
        guard let count = BigEndian.read(UInt32.self, r, at: i).map(Int.init), count <= FreeForm.maximumCount else { throw bad }
        i += 4
        attributes = Dictionary(minimumCapacity: count)
        for _ in 0..<count {
            let name = try field()
            attributes[name] = try field()
        }
        guard i == r.count else { throw bad }
    }
}

/// A change to some of an item's free-form attributes (`locket update
/// --set-attr/--remove-attr`): names set to a value, names removed, every
/// other attribute kept. `update` applies it to each match in turn, where
/// the Secret Service's Attributes property replaces the whole set.
public struct FreeFormEdit: Sendable, Equatable {
    /// Names set (added or replaced), with their new values.
    public var setting: [String: String] = [:]
    /// Names removed; a name the item lacks is left absent.
    public var removing: Set<String> = []

    public init(setting: [String: String] = [:], removing: Set<String> = []) {
        self.setting = setting
        self.removing = removing
    }

    public var isEmpty: Bool { setting.isEmpty && removing.isEmpty }

    /// `freeForm` with the edit applied (removals first: a name both removed
    /// and set ends set), checked as a new item's would be.
    func applied(to freeForm: FreeForm) throws -> FreeForm {
        var edited = freeForm
        for name in removing { edited.attributes[name] = nil }
        for (name, value) in setting { edited.attributes[name] = value }
        try edited.validate()
        return edited
    }
}
