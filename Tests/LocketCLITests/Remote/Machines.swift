import Foundation
import LocketTestSupport
import XCTest

/// The "machines" of a command-line test on a remote keychain: each a
/// `Sandbox` (its own HOME, device secret and session), all removed by
/// `removeAll()` in the test's tearDown.
final class Machines {
    private var sandboxes: [Sandbox] = []

    /// A new machine.
    func make() throws -> Sandbox {
        let sandbox = try Sandbox()
        sandboxes.append(sandbox)
        return sandbox
    }

    func removeAll() {
        for sandbox in sandboxes { sandbox.remove() }
        sandboxes = []
    }

    /// The binary under test, run on `sandbox` as its user would.
    static func locket(_ sandbox: Sandbox, _ arguments: [String], input: Input = .devNull) throws -> RunResult {
        let binary = try XCTUnwrap(LocketBinary.path, "no locket binary: make build")
        return Spawn.run(binary, arguments, environment: sandbox.environment, input: input, timeout: 60)
    }

    /// The fingerprint `keychain enroll` printed ("device 2: fingerprint 3f9a-...-9c03 (words)"), "" when none.
    static func fingerprint(_ enrollOutput: String) -> String {
        guard let line = enrollOutput.split(separator: "\n").first(where: { $0.hasPrefix("device ") }),
              let range = line.range(of: ": fingerprint ") else { return "" }
        return String(line[range.upperBound...].prefix { $0 != " " })
    }
}
