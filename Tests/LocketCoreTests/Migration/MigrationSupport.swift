import Foundation
@testable import LocketCore
import XCTest

/// The fixtures in Tests/Fixtures/migration.
enum MigrationFixtures {
    static var directory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/migration").path
    }

    static func bytes(_ name: String) throws -> SecureBytes {
        try SecureBytes(copying: Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))))
    }
}

/// Everything a source yields, in order.
struct MigrationResult {
    var items: [MigrationItem] = []
    var skipped: [MigrationSkip] = []

    init(_ format: MigrationFormat, _ input: SecureBytes) throws {
        try Migration.read(format, input) { add($0) }
    }

    init(collecting: ((MigrationEntry) -> Void) throws -> Void) rethrows {
        try collecting { add($0) }
    }

    private mutating func add(_ entry: MigrationEntry) {
        switch entry {
        case .item(let item): items.append(item)
        case .skipped(let skip): skipped.append(skip)
        }
    }

    /// The one item whose origin starts with `origin`.
    func item(_ origin: String, file: StaticString = #filePath, line: UInt = #line) -> MigrationItem? {
        let found = items.filter { $0.origin == origin }
        XCTAssertEqual(found.count, 1, "items from \(origin): \(items.map(\.origin))", file: file, line: line)
        return found.first
    }

    func reason(_ origin: String) -> String? { skipped.first { $0.origin == origin }?.reason }
}

extension MigrationItem {
    func text(_ attribute: Attribute) -> String? { attributes[attribute].map { String(decoding: $0, as: UTF8.self) } }
    var secret: String { String(decoding: data.bytes, as: UTF8.self) }
}

/// No skip reason may quote a secret of the fixture.
func assertNoSecret(_ skipped: [MigrationSkip], _ secrets: [String], file: StaticString = #filePath, line: UInt = #line) {
    for skip in skipped {
        for secret in secrets {
            XCTAssertFalse(skip.reason.contains(secret) || skip.origin.contains(secret), "'\(skip.origin)': \(skip.reason)", file: file, line: line)
        }
    }
}
