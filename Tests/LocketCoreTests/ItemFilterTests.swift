import Foundation
import XCTest
@testable import LocketCore

/// The neutral item filter (issue 25) in its three renderings, which must
/// select the same rows: format 2's SQL for SQLite and for PostgreSQL, and
/// the offline cache's match in memory; free-form pairs (SPEC §18) included.
final class ItemFilterTests: XCTestCase {
    private func term(_ attribute: Attribute, _ digest: Int64, empty: Bool = false) -> ItemFilter.Term {
        ItemFilter.Term(attribute: attribute, digest: digest, isEmpty: empty)
    }

    /// A query planner without statistics takes the first probe as the
    /// driver: a value first, then the free-form pairs, then an account
    /// (often shared), then an empty value (shared by most items).
    func testTheProbesAreOrderedFromTheLikeliestToBeSelective() {
        var filter = ItemFilter(itemClass: .genericPassword)
        filter.terms = [term(.label, 4, empty: true), term(.account, 3), term(.service, 1)]
        filter.freeForm = [21, 22]
        let sqlite = filter.condition(.sqlite)
        XCTAssertEqual(sqlite.sql, "cls = ?1 AND id IN (SELECT item FROM blind WHERE digest = ?2)"
            + " AND EXISTS (SELECT 1 FROM blind WHERE digest = ?3 AND item = items.id)"
            + " AND EXISTS (SELECT 1 FROM blind WHERE digest = ?4 AND item = items.id)"
            + " AND EXISTS (SELECT 1 FROM blind WHERE digest = ?5 AND item = items.id)"
            + " AND EXISTS (SELECT 1 FROM blind WHERE digest = ?6 AND item = items.id)")
        let digests: [Int64] = sqlite.bindings.compactMap { if case .int(let d) = $0 { d } else { nil } }
        XCTAssertEqual(digests, [1, 21, 22, 3, 4])
        let postgres = filter.condition(.postgres)
        XCTAssertTrue(postgres.sql.hasPrefix("cls = $1 AND id IN (SELECT item FROM locket.blind WHERE digest = $2)"), postgres.sql)
        XCTAssertEqual(postgres.bindings.count, sqlite.bindings.count)

        // Free-form pairs alone: the first drives.
        var alone = ItemFilter(itemClass: .genericPassword)
        alone.freeForm = [7]
        XCTAssertEqual(alone.condition(.sqlite).sql, "cls = ?1 AND id IN (SELECT item FROM blind WHERE digest = ?2)")
    }

    /// The offline cache's rows are matched by the same terms, free-form pairs included.
    func testTheInMemoryMatchNeedsEveryFreeFormPair() {
        var filter = ItemFilter(itemClass: .genericPassword)
        filter.terms = [term(.service, 1)]
        filter.freeForm = [21, 22]
        func matches(_ digests: Set<Int64>) -> Bool {
            filter.matches(itemClass: ItemClass.genericPassword.rawValue, group: "default", ref: [1], protectionClass: "ak",
                           primaryKey: [9], digests: digests)
        }
        XCTAssertTrue(matches([1, 21, 22, 5]))
        XCTAssertFalse(matches([1, 21]), "a free-form pair the row lacks")
        XCTAssertFalse(matches([21, 22]), "an attribute the row lacks")
        filter.freeForm = []
        XCTAssertTrue(matches([1]))
    }
}
