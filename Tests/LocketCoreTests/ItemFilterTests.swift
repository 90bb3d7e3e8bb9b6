import Foundation
import XCTest
@testable import LocketCore
import LocketTestSupport

/// The neutral item filter (issue 25) in its three renderings, which must
/// select the same rows: format 2's SQL for SQLite and for PostgreSQL, and
/// the match in memory (the offline cache's and `MemoryStorage`'s); free-form
/// pairs (SPEC §18) included. Checked on the rows each selects from the same
/// items (issue 38), not on the text of its SQL alone.
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

    // MARK: - The rows each rendering selects

    /// One item of the data set, as a query sees it.
    private struct Fixture {
        var itemClass: ItemClass = .genericPassword
        var attributes: [Attribute: String]
        var group = "default"
        var accessible: ProtectionClass = .whenUnlocked
        var synchronizable = false
        var freeForm: [String: String] = [:]
    }

    private static let data: [Fixture] = [
        Fixture(attributes: [.service: "a", .account: "alice"]),
        Fixture(attributes: [.service: "a", .account: "bob"], accessible: .afterFirstUnlock),
        Fixture(attributes: [.service: "b", .account: "alice", .label: "L"]),
        Fixture(attributes: [.service: "b"]),
        Fixture(attributes: [.service: "a", .account: "alice"], group: "other"),
        Fixture(attributes: [.service: "c", .account: "carol"], synchronizable: true),
        Fixture(attributes: [.service: "a", .account: "dave"], freeForm: ["team": "blue"]),
        Fixture(itemClass: .internetPassword, attributes: [.server: "example.com", .account: "alice"]),
        Fixture(attributes: [.service: "d", .account: "erin"], freeForm: ["team": "blue", "tier": "1"]),
    ]

    /// A query, and which of `data` (by index) it names.
    private struct Case {
        var name: String
        var query: Query
        var expected: Set<Int>
    }

    private static func cases() throws -> [Case] {
        func q(_ equalities: [Attribute: String] = [:], in itemClass: ItemClass = .genericPassword, group: String? = nil,
               accessible: ProtectionClass? = nil, synchronizable: Synchronizable? = nil, freeForm: [String: String] = [:]) throws -> Query {
            var query = Query(itemClass: itemClass)
            for (attribute, value) in equalities.sorted(by: { $0.key.rawValue < $1.key.rawValue }) { try query.match(attribute, Array(value.utf8)) }
            for (name, value) in freeForm.sorted(by: { $0.key < $1.key }) { query.match(freeForm: name, value) }
            query.accessGroup = group
            query.accessible = accessible
            query.synchronizable = synchronizable
            return query
        }
        return [
            Case(name: "the class alone", query: try q(), expected: [0, 1, 2, 3, 4, 6, 8]),
            Case(name: "a value", query: try q([.service: "a"]), expected: [0, 1, 4, 6]),
            Case(name: "an account", query: try q([.account: "alice"]), expected: [0, 2, 4]),
            Case(name: "the whole primary key", query: try q([.service: "a", .account: "alice"]), expected: [0, 4]),
            Case(name: "the primary key in one group", query: try q([.service: "a", .account: "alice"], group: "other"), expected: [4]),
            Case(name: "an empty value", query: try q([.service: "b", .account: ""]), expected: [3]),
            Case(name: "an empty value every item has", query: try q([.comment: ""]), expected: [0, 1, 2, 3, 4, 6, 8]),
            Case(name: "a label given", query: try q([.label: "L"]), expected: [2]),
            Case(name: "a label taken from the service", query: try q([.label: "a"]), expected: [0, 1, 4, 6]),
            Case(name: "a protection class", query: try q(accessible: .afterFirstUnlock), expected: [1]),
            Case(name: "synchronizable only", query: try q(synchronizable: .yes), expected: [5]),
            Case(name: "synchronizable or not", query: try q([.service: "c"], synchronizable: .any), expected: [5]),
            Case(name: "not synchronizable (not given)", query: try q([.service: "c"]), expected: []),
            Case(name: "a free-form pair", query: try q(freeForm: ["team": "blue"]), expected: [6, 8]),
            Case(name: "two free-form pairs", query: try q(freeForm: ["team": "blue", "tier": "1"]), expected: [8]),
            Case(name: "a free-form pair and a value", query: try q([.service: "a"], freeForm: ["team": "blue"]), expected: [6]),
            Case(name: "a value nobody has", query: try q([.service: "zzz"]), expected: []),
            Case(name: "another class", query: try q([.account: "alice"], in: .internetPassword), expected: [7]),
        ]
    }

    /// Adds `data` in order, so that every storage gives the items the same ids (1, 2, ...).
    private func fill(_ keychain: Keychain, freeForm: Bool) throws -> [Int64: Int] {
        var ids: [Int64: Int] = [:]
        var id: Int64 = 0
        for (index, fixture) in Self.data.enumerated() {
            if !fixture.freeForm.isEmpty && !freeForm { continue }
            var item = NewItem(itemClass: fixture.itemClass)
            for (attribute, value) in fixture.attributes { try item.set(attribute, Array(value.utf8)) }
            if fixture.synchronizable { try item.set(.synchronizable, [0x31]) }
            item.accessGroup = fixture.group
            item.accessible = fixture.accessible
            item.freeForm = FreeForm(attributes: fixture.freeForm)
            _ = try keychain.add(item, data: try SecureBytes(copying: Array("secret \(index)".utf8)))
            id += 1
            ids[id] = index
        }
        return ids
    }

    /// The items `query`'s filter (changed by `adjust`) selects in `keychain`'s storage: its own rendering, run there.
    private func selected(_ query: Query, in keychain: Keychain, ids: [Int64: Int],
                          adjust: (inout ItemFilter) -> Void = { _ in }) throws -> Set<Int> {
        var found: Set<Int> = []
        var filter = try keychain.engine.storeFilter(query)
        adjust(&filter)
        try keychain.engine.transaction(write: false) {
            let cursor = try keychain.engine.storage.itemStore.select(filter, data: false)
            while let row = try cursor.next() { found.insert(try XCTUnwrap(ids[row.id], "an id no item was given: \(row.id)")) }
        }
        return found
    }

    /// The same items in a file, in memory and (where PostgreSQL runs) in a
    /// database: every query's filter, rendered by each storage, selects the
    /// same rows there, and the rows the query names. A remote keychain has
    /// no free-form attributes: those items and queries are left out there.
    func testTheThreeRenderingsSelectTheSameRowsFromTheSameData() throws {
        let file = try TemporaryKeychain()
        defer { file.remove() }
        let memory = try TemporaryKeychain(memory: "correct horse")
        defer { memory.remove() }
        var storages: [(String, Keychain, [Int64: Int])] = []
        for (name, temporary) in [("file", file), ("memory", memory)] {
            let keychain = try temporary.open()
            storages.append((name, keychain, try fill(keychain, freeForm: true)))
        }
        var remote: TemporaryKeychain?
        do {
            remote = try TemporaryKeychain(remote: try Postgres.newKeychainLocation(), kdf: .weakForTests)
        } catch is XCTSkip {
            print("ItemFilterTests: no PostgreSQL here: the remote rendering is not compared")
        }
        defer { remote?.remove() }
        if let remote {
            let keychain = try remote.open()
            storages.append(("remote", keychain, try fill(keychain, freeForm: false)))
        }
        XCTAssertEqual(storages.map { $0.2.count }, storages.map { $0.0 == "remote" ? Self.data.filter(\.freeForm.isEmpty).count : Self.data.count })
        for test in try Self.cases() {
            for (name, keychain, ids) in storages {
                let usesFreeForm = !test.query.freeForm.isEmpty
                if name == "remote" && usesFreeForm { continue }
                let expected = name == "remote" ? test.expected.filter { Self.data[$0].freeForm.isEmpty } : test.expected
                XCTAssertEqual(try selected(test.query, in: keychain, ids: ids), expected, "\(test.name), \(name)")
            }
        }
        // An attribute the class lacks (a query can't name one; a filter can):
        // its empty value matches every item of the class (but the synchronizable
        // one, which a query that does not ask for them leaves out), any other value none.
        let genericPasswords = Set(Self.data.indices.filter { Self.data[$0].itemClass == .genericPassword && !Self.data[$0].synchronizable })
        for (name, keychain, ids) in storages {
            let expected = name == "remote" ? genericPasswords.filter { Self.data[$0].freeForm.isEmpty } : genericPasswords
            XCTAssertEqual(try selected(Query(itemClass: .genericPassword), in: keychain, ids: ids) {
                $0.terms.append(ItemFilter.Term(attribute: .server, digest: 1, isEmpty: true))
            }, expected, "an empty value of an attribute the class lacks, \(name)")
            XCTAssertEqual(try selected(Query(itemClass: .genericPassword), in: keychain, ids: ids) {
                $0.terms.append(ItemFilter.Term(attribute: .server, digest: 1, isEmpty: false))
            }, [], "a value of an attribute the class lacks, \(name)")
        }
    }
}
