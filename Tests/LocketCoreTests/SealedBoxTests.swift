@testable import LocketCore
import XCTest

/// `SealedBox`, the one home for `crypto_box_seal`: a key that isn't one is
/// errSecParam wherever it is sealed to.
final class SealedBoxTests: XCTestCase {
    /// The all-zero point is of small order: libsodium refuses to seal to it.
    private let smallOrder = [UInt8](repeating: 0, count: 32)

    func testASealToAKeyOfSmallOrderIsAParameterError() {
        XCTAssertThrowsError(try SealedBox.seal(SecureBytes(copying: [1, 2, 3]), to: smallOrder)) {
            XCTAssertEqual(($0 as? KeychainError)?.code, .param, String(describing: $0))
        }
        XCTAssertThrowsError(try SealedBox.seal(SecureBytes(copying: [1, 2, 3]), to: [1, 2, 3])) {
            XCTAssertEqual(($0 as? KeychainError)?.code, .param, String(describing: $0))
        }
    }

    func testABackupToARecipientOfSmallOrderIsRefusedWithItsWording() {
        XCTAssertThrowsError(try BackupWriter(fd: -1, recipients: [smallOrder])) {
            XCTAssertEqual(($0 as? KeychainError)?.code, .param, String(describing: $0))
            XCTAssertEqual(($0 as? KeychainError)?.message, "a recipient is not a valid X25519 public key")
        }
    }
}
