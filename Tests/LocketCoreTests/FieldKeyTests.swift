@testable import LocketCore
import XCTest

/// Field keys are derived with a context built on the stack; the bytes
/// hashed must stay those of `KeyDerivation.Context`, or every sealed row
/// written before would stop opening.
final class FieldKeyTests: XCTestCase {
    func testFieldKeyIsTheContextDerivation() throws {
        let groupKey = try SecureBytes(copying: (0..<32).map { UInt8($0 * 7 & 0xff) })
        for itemClass in [ItemClass.genericPassword, .internetPassword, .key] {
            for ref in [[UInt8](), [1], (0..<16).map { UInt8($0) }, [UInt8](repeating: 0xEE, count: 300)] {
                for field in [Sealing.Field.attributes, .data] {
                    let row = Sealing.RowIdentity(itemClass: itemClass, accessible: .whenUnlocked, accessGroup: "g", ref: ref)
                    let context = KeyDerivation.Context("locket.item.v1").with(itemClass.rawValue).with(ref).with(field.rawValue)
                    XCTAssertEqual(try Sealing.fieldKey(groupKey, row, field).bytes, try KeyDerivation.derive(groupKey, context).bytes,
                                   "\(itemClass) ref of \(ref.count) bytes, \(field)")
                }
            }
        }
    }

    /// An opened secret record's secret and metadata are views of it, not
    /// copies: the bytes are right, and they stay valid after the record
    /// itself is dropped.
    func testDataRecordDecodeGivesViewsThatOutliveTheRecord() throws {
        let secret = try SecureBytes(copying: Array("s3cret".utf8))
        let extra = try SecureBytes(copying: Array("meta".utf8))
        var decoded = try DataRecord.decode(DataRecord.encode(secret: secret, extra: extra))
        XCTAssertEqual(decoded.secret.bytes, Array("s3cret".utf8))
        XCTAssertEqual(decoded.extra?.bytes, Array("meta".utf8))
        for _ in 0..<100 { _ = try SecureBytes(count: 40) }
        XCTAssertEqual(decoded.secret.bytes, Array("s3cret".utf8))
        decoded = try DataRecord.decode(DataRecord.encode(secret: secret, extra: nil))
        XCTAssertEqual(decoded.secret.bytes, Array("s3cret".utf8))
        XCTAssertNil(decoded.extra)
        XCTAssertEqual(try DataRecord.decode(DataRecord.encode(secret: SecureBytes(count: 0), extra: nil)).secret.count, 0)
        XCTAssertThrowsError(try DataRecord.decode(SecureBytes(count: 0)))
        XCTAssertThrowsError(try DataRecord.decode(SecureBytes(copying: [1, 0, 0, 0, 9, 1])))
        XCTAssertThrowsError(try DataRecord.decode(SecureBytes(copying: [2, 1])))
    }

    /// A slice of a slice points into the first buffer's memory.
    func testSliceOfASlice() throws {
        let whole = try SecureBytes(copying: Array(0..<20).map { UInt8($0) })
        let inner = whole.slice(5..<15).slice(2..<4)
        XCTAssertEqual(inner.bytes, [7, 8])
        inner.withUnsafeMutableBytes { $0[0] = 0xFF }
        XCTAssertEqual(whole.bytes[7], 0xFF)
        XCTAssertEqual(whole.slice(20..<20).count, 0)
    }
}
