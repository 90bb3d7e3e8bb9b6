/// The protocol between `locket` and its PostgreSQL helper, `locket-postgres`
/// (docs/REMOTE.md). Each frame is a 4-byte big-endian body length, then the
/// body: one message-type byte and its fields. Integers are big-endian;
/// `bytes` and `string` are a 4-byte length and that many bytes. A frame over
/// `Wire.maximumFrame` or a field running past its frame is refused before
/// anything is allocated for it.
public enum Wire {
    /// The protocol version both sides must speak; the handshake refuses any other.
    public static let version: UInt16 = 1
    /// The handshake's magic, so a wrong program on the other end is told apart from a version mismatch.
    public static let magic: [UInt8] = Array("LKPG".utf8)
    /// The largest frame body either side sends or accepts (a 16 MiB item plus headroom).
    public static let maximumFrame = 17 * 1024 * 1024
    /// The most parameters one statement may carry (PostgreSQL's own limit is 65,535).
    public static let maximumParameters = 1024
    /// The longest SQL text a statement may have.
    public static let maximumSQL = 65_536
    /// The most connection keywords a connect frame may carry.
    public static let maximumKeywords = 64

    /// What each frame body starts with.
    public enum Kind: UInt8, Sendable {
        // locket -> helper
        /// magic, u16 version
        case hello = 0x01
        /// u16 n, n x (string keyword, string value), u8 has-password, [bytes password]
        case connect = 0x02
        /// string sql, u16 n, n x parameter
        case execute = 0x03
        /// nothing: roll back what is open, disconnect, exit 0
        case close = 0x04
        // helper -> locket
        /// magic, u16 version
        case helloReply = 0x81
        /// string server version
        case ready = 0x82
        /// u16 n, n x (string name, u32 type oid)
        case columns = 0x83
        /// u16 n, n x (u8 is-null, [bytes value]), values in PostgreSQL's binary format
        case row = 0x84
        /// string command tag, u64 rows affected
        case done = 0x85
        /// string sqlstate (may be empty), u8 flags, string message, string constraint
        case error = 0x86
    }

    /// Bits of an error frame's flags.
    public enum ErrorFlag {
        /// The connection to the server is gone; nothing more runs on it.
        public static let connectionLost: UInt8 = 1
        /// The frame locket sent was malformed; the helper exits after this reply.
        public static let protocolError: UInt8 = 2
        /// The helper could not connect (connect frame only).
        public static let connectFailed: UInt8 = 4
    }

    /// Parameter tags of an execute frame. Every parameter goes to PostgreSQL
    /// in binary format with its type fixed here, never spliced into SQL text.
    public enum ParameterTag: UInt8, Sendable {
        /// NULL (no value follows).
        case null = 0
        /// bytea: bytes value.
        case bytea = 1
        /// text: bytes value; the server refuses bytes that are not valid UTF-8.
        case text = 2
        /// int8: 8 bytes.
        case int8 = 3
        /// bool: 1 byte.
        case bool = 4
    }

    /// A frame that could not be read.
    public enum Failure: Error, Equatable, Sendable {
        /// The other end closed the stream between frames.
        case endOfStream
        /// The stream ended inside a frame.
        case truncated
        /// A frame over `maximumFrame`, or a field over its limit.
        case tooLarge
        /// A frame whose fields don't parse.
        case malformed(String)
        /// read(2) or write(2) failed with this errno.
        case system(Int32)
    }
}

/// Builds one frame body.
public struct FrameWriter: Sendable {
    /// The body so far.
    public private(set) var bytes: [UInt8]

    public init(_ kind: Wire.Kind) { bytes = [kind.rawValue] }
    /// A frame of the TPM helper's protocol; `capacity` reserved at once, so a
    /// body that will hold a secret is never copied to a larger buffer (which
    /// would leave the old one unwiped).
    public init(tpm kind: TPMWire.Kind, capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes.append(kind.rawValue)
    }

    public mutating func u8(_ value: UInt8) { bytes.append(value) }
    public mutating func u16(_ value: UInt16) { bytes.append(UInt8(value >> 8)); bytes.append(UInt8(value & 0xff)) }
    public mutating func u32(_ value: UInt32) { for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((value >> UInt32(shift)) & 0xff)) } }
    public mutating func u64(_ value: UInt64) { for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((value >> UInt64(shift)) & 0xff)) } }
    public mutating func raw(_ value: some Collection<UInt8>) { bytes.append(contentsOf: value) }
    public mutating func field(_ value: some Collection<UInt8>) { u32(UInt32(value.count)); bytes.append(contentsOf: value) }
    public mutating func string(_ value: String) { field(Array(value.utf8)) }

    /// Overwrites the body with zeros (it may have held a password or a sealed value).
    public mutating func wipe() {
        for index in bytes.indices { bytes[index] = 0 }
    }
}

/// Reads the fields of one frame body, refusing any that runs past it.
public struct FrameReader: Sendable {
    private let bytes: [UInt8]
    private var offset: Int
    /// The message type.
    public let kind: UInt8

    /// Fails with `.malformed` on an empty body.
    public init(_ body: [UInt8]) throws(Wire.Failure) {
        guard let first = body.first else { throw .malformed("empty frame") }
        bytes = body
        kind = first
        offset = 1
    }

    /// Whether every byte has been read.
    public var atEnd: Bool { offset == bytes.count }

    public mutating func u8() throws(Wire.Failure) -> UInt8 {
        guard offset < bytes.count else { throw .malformed("frame ends inside a field") }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func u16() throws(Wire.Failure) -> UInt16 { UInt16(try u8()) << 8 | UInt16(try u8()) }

    public mutating func u32() throws(Wire.Failure) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 { value = value << 8 | UInt32(try u8()) }
        return value
    }

    public mutating func u64() throws(Wire.Failure) -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(try u8()) }
        return value
    }

    public mutating func raw(_ count: Int) throws(Wire.Failure) -> [UInt8] {
        guard count >= 0, count <= bytes.count - offset else { throw .malformed("frame ends inside a field") }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// A length-prefixed field of at most `limit` bytes.
    public mutating func field(limit: Int = Wire.maximumFrame) throws(Wire.Failure) -> [UInt8] {
        let count = Int(try u32())
        guard count <= limit else { throw .tooLarge }
        return try raw(count)
    }

    /// Calls `body` with a length-prefixed field of at most `limit` bytes in
    /// place, copying nothing (for a secret: the caller copies it where it is wiped).
    public mutating func withField<R>(limit: Int, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        let count = Int(try u32())
        guard count <= limit else { throw Wire.Failure.tooLarge }
        guard count <= bytes.count - offset else { throw Wire.Failure.malformed("frame ends inside a field") }
        defer { offset += count }
        return try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[offset..<offset + count])) }
    }

    /// A length-prefixed field that must be UTF-8 without NUL (it goes to C as a string).
    public mutating func string(limit: Int = Wire.maximumSQL) throws(Wire.Failure) -> String {
        let field = try field(limit: limit)
        guard !field.contains(0), let text = String(validating: field, as: UTF8.self) else {
            throw .malformed("a text field is not UTF-8 without NUL")
        }
        return text
    }

    /// Fails unless every byte was read.
    public func finish() throws(Wire.Failure) {
        guard atEnd else { throw .malformed("trailing bytes after the last field") }
    }
}
