import LocketCore
import LocketWire

/// A parameter or column value of a remote statement. Every parameter
/// travels in PostgreSQL's binary format with a fixed type; text is a Swift
/// String, so it is always valid UTF-8 (bytes that are not go as `.bytes`).
public enum RemoteValue: Equatable, Sendable {
    /// SQL NULL.
    case null
    /// bytea.
    case bytes([UInt8])
    /// text (also varchar and name columns).
    case text(String)
    /// int8 (also int2, int4 columns); timestamps read as microseconds since 1970.
    case int(Int64)
    /// bool.
    case bool(Bool)

    /// The bytes, or nil for another type.
    public var bytes: [UInt8]? { if case .bytes(let value) = self { value } else { nil } }
    /// The text, or nil for another type.
    public var text: String? { if case .text(let value) = self { value } else { nil } }
    /// The integer, or nil for another type.
    public var int: Int64? { if case .int(let value) = self { value } else { nil } }
    /// The bool, or nil for another type.
    public var bool: Bool? { if case .bool(let value) = self { value } else { nil } }

    func encode(into writer: inout FrameWriter) {
        switch self {
        case .null: writer.u8(Wire.ParameterTag.null.rawValue)
        case .bytes(let value): writer.u8(Wire.ParameterTag.bytea.rawValue); writer.field(value)
        case .text(let value): writer.u8(Wire.ParameterTag.text.rawValue); writer.field(Array(value.utf8))
        case .int(let value): writer.u8(Wire.ParameterTag.int8.rawValue); writer.u64(UInt64(bitPattern: value))
        case .bool(let value): writer.u8(Wire.ParameterTag.bool.rawValue); writer.u8(value ? 1 : 0)
        }
    }

    /// Microseconds from PostgreSQL's epoch (2000-01-01) to Unix's.
    private static let postgresEpoch: Int64 = 946_684_800_000_000

    /// A column value in binary format, read by its type OID.
    static func decode(_ raw: [UInt8], oid: UInt32) throws -> RemoteValue {
        func integer() throws -> Int64 {
            guard [2, 4, 8].contains(raw.count) else { throw RemoteFailure.protocolViolation("an integer column of \(raw.count) bytes") }
            var value: UInt64 = 0
            for byte in raw { value = value << 8 | UInt64(byte) }
            // Sign-extend the narrower types.
            let shift = UInt64(64 - raw.count * 8)
            return Int64(bitPattern: value << shift) >> Int64(shift)
        }
        switch oid {
        case 17: return .bytes(raw)
        case 25, 1043, 19, 18, 1042:
            guard let text = String(validating: raw, as: UTF8.self) else { throw RemoteFailure.protocolViolation("a text column is not UTF-8") }
            return .text(text)
        case 20, 23, 21: return .int(try integer())
        case 16:
            guard raw.count == 1 else { throw RemoteFailure.protocolViolation("a bool column of \(raw.count) bytes") }
            return .bool(raw[0] != 0)
        case 1184, 1114: return .int(try integer() &+ postgresEpoch)
        default: return .bytes(raw)
        }
    }
}

/// One row of a result: its values in column order, and the column names.
public struct RemoteRow: Sendable {
    /// The values, in the statement's column order.
    public let values: [RemoteValue]
    let names: [String]

    /// The value of column `index`.
    public subscript(index: Int) -> RemoteValue { values[index] }

    /// The value of the column called `name` (NULL when there is none).
    public subscript(name: String) -> RemoteValue { names.firstIndex(of: name).map { values[$0] } ?? .null }
}
