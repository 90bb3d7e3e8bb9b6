import Foundation
import XCTest

/// Issue 12: the engine returns typed reasons and never words command-line
/// advice; LocketCLI/Hints.swift words every hint.
final class EngineWordingTests: XCTestCase {
    func testTheEngineWordsNoHints() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let engine = root.appendingPathComponent("Sources/LocketCore").path
        guard let files = FileManager.default.enumerator(atPath: engine) else { throw XCTSkip("no sources at \(engine)") }
        var offences: [String] = []
        for case let name as String in files where name.hasSuffix(".swift") {
            let text = try String(contentsOfFile: engine + "/" + name, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                if code.hasPrefix("//") { continue }
                // KeychainError's own declaration of the field and its copies.
                if name == "KeychainError.swift" { continue }
                if code.contains("hint:") || code.contains("run 'locket") || code.contains("locket help") {
                    offences.append("\(name):\(number + 1): \(code)")
                }
            }
        }
        XCTAssertEqual(offences, [], "advice worded in the engine; give a KeychainError.Reason and word it in LocketCLI/Hints.swift")
    }
}
