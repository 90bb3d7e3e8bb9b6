@testable import LocketCore
import XCTest

/// `ProtectionClass.Tiers`, the bits that replaced a `Set` of tiers on the
/// path of every command that opens a keychain: the same answers a set gives.
final class ProtectionTiersTests: XCTestCase {
    private let every: [ProtectionClass.Tier] = [.always, .whenUnlocked, .afterFirstUnlock]

    func testTheTiersBehaveAsASetOfTiers() {
        XCTAssertTrue(every.allSatisfy { !ProtectionClass.Tiers.none.contains($0) })
        XCTAssertTrue(every.allSatisfy { ProtectionClass.Tiers.all.contains($0) })
        XCTAssertEqual(every.filter { ProtectionClass.Tiers.session.contains($0) }, [.whenUnlocked, .afterFirstUnlock])
        for tier in every {
            var tiers = ProtectionClass.Tiers(.always)
            tiers.insert(tier)
            XCTAssertEqual(every.filter { tiers.contains($0) }, every.filter { $0 == .always || $0 == tier }, "\(tier)")
            XCTAssertEqual(tiers.intersection(.session), tier == .always ? .none : ProtectionClass.Tiers(tier))
            XCTAssertEqual(tiers.union(.session), .all)
        }
    }
}
