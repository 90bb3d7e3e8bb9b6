import LocketCore
import XCTest

/// Secrets: exact bytes up to 16 MiB, errSecDataTooLarge above, nothing stored on failure.
final class DataLimitTests: KeychainTestCase {
    /// `count` bytes of a repeating pattern, in guarded memory.
    private func blob(_ count: Int) throws -> SecureBytes {
        let out = try SecureBytes(count: count)
        out.withUnsafeMutableBytes { raw in
            for i in stride(from: 0, to: raw.count, by: 4096) { raw[i] = UInt8(truncatingIfNeeded: i / 4096 | 1) }
        }
        return out
    }

    func testLimitIs16MiB() {
        XCTAssertEqual(Keychain.maximumDataLength, 16 * 1024 * 1024)
    }

    func testOneByteOverTheLimitIsTooLargeOnAdd() throws {
        XCTAssertKeychainError(.dataTooLarge, try keychain.add(genp("svc", "big"), data: blob(Keychain.maximumDataLength + 1)))
        XCTAssertKeychainError(.dataTooLarge,
                               try keychain.add(genp("svc", "big"), data: blob(Keychain.maximumDataLength + 1), updateExisting: true))
        XCTAssertEqual(try allGenp().count, 0)
    }

    func testOneByteOverTheLimitIsTooLargeOnUpdate() throws {
        try addGenp("svc", "alice", secret: "small")
        XCTAssertKeychainError(.dataTooLarge,
                               try keychain.update(query(.genericPassword, [.account: "alice"]), changes: [:],
                                                   data: blob(Keychain.maximumDataLength + 1)))
        XCTAssertEqual(try allGenp()[0].secretString, "small")
    }

    func testExactly16MiBRoundTrips() throws {
        let data = try blob(Keychain.maximumDataLength)
        try keychain.add(genp("svc", "big"), data: data)
        let found = try keychain.search(query(.genericPassword, [.account: "big"]), returnData: true)[0]
        XCTAssertEqual(found.data?.count, Keychain.maximumDataLength)
        XCTAssertTrue(found.data.map { $0.constantTimeEquals(data) } ?? false)
    }

    func testBinarySecretRoundTripsByteExact() throws {
        let raw: [UInt8] = [0x00, 0xff, 0x0a, 0x0d, 0x00, 0x80, 0xc3] + (0...255).map { UInt8($0) }
        try keychain.add(genp("svc", "bin"), data: SecureBytes(copying: raw))
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.account: "bin"]), returnData: true)[0].data?.bytes, raw)
    }

    func testEmptySecretRoundTrips() throws {
        try keychain.add(genp("svc", "empty"), data: SecureBytes(count: 0))
        let found = try keychain.search(query(.genericPassword, [.account: "empty"]), returnData: true)[0]
        XCTAssertNotNil(found.data)
        XCTAssertEqual(found.data?.count, 0)
        // And an update to the empty secret.
        try addGenp("svc", "later", secret: "x")
        try keychain.update(query(.genericPassword, [.account: "later"]), changes: [:], data: SecureBytes(count: 0))
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.account: "later"]), returnData: true)[0].data?.count, 0)
    }

    func testTrailingNewlinesAndNulsAreKept() throws {
        try addGenp("svc", "nl", secret: "line\n\n")
        XCTAssertEqual(try keychain.search(query(.genericPassword, [.account: "nl"]), returnData: true)[0].secretString, "line\n\n")
    }

    func testLargeAttributeValuesRoundTrip() throws {
        let comment = [UInt8](repeating: 0x63, count: Attribute.maximumValueLength)
        var item = NewItem(itemClass: .genericPassword)
        try item.set(.service, bytes("svc"))
        try item.set(.comment, comment)
        try keychain.add(item, data: secret("x"))
        var q = Query(itemClass: .genericPassword)
        try q.match(.comment, comment)
        XCTAssertEqual(try keychain.search(q)[0][.comment], comment)
    }
}
