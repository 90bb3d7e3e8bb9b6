import Foundation
import LocketFuzzTargets
import XCTest

/// Every seed of `fuzz/corpus/` through its fuzz target's checks, in-process
/// (issue 6's smoke run, without the sanitizer build `make fuzz` keeps): a
/// crash or a failed property stops the test run.
final class FuzzCorpusTests: XCTestCase {
    private static let fuzz = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../fuzz").standardized

    func testEverySeedPassesItsTarget() throws {
        var seeds = 0
        for (name, target) in FuzzTargets.all.sorted(by: { $0.key < $1.key }) {
            let directory = Self.fuzz.appendingPathComponent("corpus/\(name)")
            let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
            XCTAssertFalse(files.isEmpty, "\(name) has no seeds")
            for file in files {
                target(Array(try Data(contentsOf: directory.appendingPathComponent(file))))
                seeds += 1
            }
        }
        XCTAssertGreaterThan(seeds, 0)
    }

    /// A target added to fuzz/ is replayed here too: the two lists agree.
    func testEveryFuzzTargetIsReplayed() throws {
        let sources = try FileManager.default.contentsOfDirectory(atPath: Self.fuzz.appendingPathComponent("Sources").path)
            .filter { $0 != "FuzzSupport" }
        XCTAssertEqual(Set(sources), Set(FuzzTargets.all.keys))
        let corpora = try FileManager.default.contentsOfDirectory(atPath: Self.fuzz.appendingPathComponent("corpus").path)
        XCTAssertEqual(Set(corpora), Set(FuzzTargets.all.keys))
    }
}
