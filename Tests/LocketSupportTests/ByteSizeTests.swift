import LocketSupport
import XCTest

/// Issue 44, point 13: a size limit is named in the unit it is a whole
/// number of ("larger than 0 MiB" was a limit of 64 KiB).
final class ByteSizeTests: XCTestCase {
    func testASizeIsNamedInTheLargestUnitItIsAWholeNumberOf() {
        XCTAssertEqual(ByteSize.text(64 * 1024), "64 KiB")
        XCTAssertEqual(ByteSize.text(1 << 20), "1 MiB")
        XCTAssertEqual(ByteSize.text(16 * 1024 * 1024), "16 MiB")
        XCTAssertEqual(ByteSize.text(17 * 1024 * 1024), "17 MiB")
        XCTAssertEqual(ByteSize.text(1 << 30), "1 GiB")
        XCTAssertEqual(ByteSize.text(1536), "1536 bytes")
        XCTAssertEqual(ByteSize.text(4096), "4 KiB")
        XCTAssertEqual(ByteSize.text(107), "107 bytes")
        XCTAssertEqual(ByteSize.text(1), "1 byte")
        XCTAssertEqual(ByteSize.text(0), "0 bytes")
        XCTAssertEqual(ByteSize.text((1 << 20) + 1), "1048577 bytes")
    }
}
