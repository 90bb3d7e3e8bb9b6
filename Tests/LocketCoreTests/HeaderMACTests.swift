@testable import LocketCore
import LocketSupport
import XCTest

/// The header MAC's input is part of the file format (SPEC §7 "Rollback"):
/// however it is built, it must be these bytes, or every keychain written
/// before stops opening (errSecDecode, "altered").
final class HeaderMACTests: XCTestCase {
    /// Keyed BLAKE2b-256 (key 32 x 0x42) of: every field as a 4-byte
    /// big-endian length and its bytes; the label `locket.header.v1`; the
    /// counts `4/4`; each meta row but `header_mac` by name (name, value);
    /// each keybag row by class (name, kek, device), a blob as 0x01 and its
    /// bytes, NULL as 0x00. Computed with Python's hashlib, not with locket.
    private let expected = "e2c7072190c80a8ea9ab7af4fb2a3bb543bbc9a3a133573871b0ac3107eeec95"

    private var header: Header {
        Header(meta: ["format": [0, 0, 0, 0, 0, 0, 0, 2], "id": [UInt8](repeating: 7, count: 16), "kdf": [],
                      "a_newer_row": [3], "header_mac": [UInt8](repeating: 1, count: 32)],
               keybag: ["ak": KeybagRow(kek: [1, 2, 3]), "dku": KeybagRow(device: [9]),
                        "idx": KeybagRow(kek: [], device: [4, 5]), "x": KeybagRow()])
    }

    private let key = try! SecureBytes(copying: [UInt8](repeating: 0x42, count: 32))

    func testTheMACIsOverTheDocumentedEncoding() throws {
        XCTAssertEqual(Hex.encode(try header.mac(key).bytes), expected)
    }

    func testEveryRowAndTheNullTagCount() throws {
        var changed = header
        changed.keybag["x"] = KeybagRow(kek: [])
        XCTAssertNotEqual(Hex.encode(try changed.mac(key).bytes), expected, "NULL and an empty blob must differ")
        changed = header
        changed.meta["kdf"] = [0]
        XCTAssertNotEqual(Hex.encode(try changed.mac(key).bytes), expected)
        changed = header
        changed.meta["header_mac"] = [2]
        XCTAssertEqual(Hex.encode(try changed.mac(key).bytes), expected, "the MAC is not over itself")
    }
}
