import Foundation
import XCTest

/// Several locket processes at once never lose an item (SPEC §7: WAL, busy timeout, one transaction per command).
final class EndToEndConcurrencyTests: EndToEndCase {
    func testParallelAddsAllLand() throws {
        initKeychain()
        let count = 16
        let results = ResultBox(count)
        let binary = self.binary!
        let environment = sandbox.environment
        DispatchQueue.concurrentPerform(iterations: count) { i in
            let result = Spawn.run(binary, ["add", "-s", "svc\(i)", "-a", "parallel", "-w"], environment: environment,
                                   input: .text("secret-\(i)\n"), timeout: Self.timeout)
            results.set(i, result)
        }
        for result in results.all { XCTAssertEqual(result?.status, 0, result?.summary ?? "no result") }
        let items = try expect(0, "--json", "find", "-a", "parallel", "--all", "-g").jsonArray()
        XCTAssertEqual(items.count, count)
        XCTAssertEqual(Set(items.compactMap { $0["data"] as? String }), Set((0..<count).map { "secret-\($0)" }))
        for item in items {
            let service = try XCTUnwrap(item["service"] as? String)
            XCTAssertEqual(item["data"] as? String, "secret-" + service.dropFirst(3), "an item got another's secret")
        }
    }

    func testParallelUpdatesAndDeletesStayConsistent() throws {
        initKeychain()
        for i in 0..<8 { add("-s", "svc\(i)", "-a", "p", secret: "v\(i)") }
        let binary = self.binary!
        let environment = sandbox.environment
        let results = ResultBox(16)
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            let args = i < 8 ? ["update", "-s", "svc\(i)", "--set", "comment=c\(i)"] : ["delete", "-s", "svc\(i - 8)", "-j", "never"]
            results.set(i, Spawn.run(binary, args, environment: environment, input: .devNull, timeout: Self.timeout))
        }
        for (i, result) in results.all.enumerated() {
            XCTAssertEqual(result?.status, i < 8 ? 0 : 44, result?.summary ?? "no result")
        }
        let items = try expect(0, "--json", "find", "-a", "p", "--all", "-g").jsonArray()
        XCTAssertEqual(items.map { $0["comment"] as? String }, (0..<8).map { "c\($0)" })
        XCTAssertEqual(items.map { $0["data"] as? String }, (0..<8).map { "v\($0)" })
    }
}

/// Results written from concurrentPerform's threads.
private final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [RunResult?]

    init(_ count: Int) { results = Array(repeating: nil, count: count) }

    func set(_ i: Int, _ result: RunResult) {
        lock.lock()
        results[i] = result
        lock.unlock()
    }

    var all: [RunResult?] {
        lock.lock()
        defer { lock.unlock() }
        return results
    }
}
