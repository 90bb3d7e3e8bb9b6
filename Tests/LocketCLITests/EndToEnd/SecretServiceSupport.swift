import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The Secret Service's end-to-end cases (SPEC §18) are Python scripts in
/// Tests/Fixtures/secret-service, driving real clients and a raw D-Bus client
/// (jeepney) against `locket secret-service` on a private bus each case
/// starts: a case per test, in the test's sandbox, its login keychain made
/// and unlocked here. A case prints `OK NAME`, or `SKIP: reason` when the
/// machine truly can't run it, or fails with one line saying what broke.
class SecretServiceCase: EndToEndCase {
    static let fixtures = LocketBinary.repositoryRoot + "/Tests/Fixtures/secret-service"
    /// secretstorage's source distribution, fetched once by pip and kept.
    static let secretStorageCache = LocketBinary.repositoryRoot + "/.build/secretstorage-sdist"
    /// The python modules the class's cases fork clients with (harness.Python):
    /// imported once by the case server, not in each case (issue 38).
    class var clientModules: [String] { [] }

    override class func tearDown() {
        SecretServiceCaseServer.stop()
        super.tearDown()
    }

    /// Runs `python3 FILE CASE` (a fork of the test process's case server:
    /// SecretServiceCaseServer); skips when a tool it needs is missing.
    func runCase(_ file: String, _ name: String, needs tools: [String] = [], environment extra: [String: String] = [:],
                 timeout: Double = 120, file testFile: StaticString = #filePath, line: UInt = #line) throws {
        for tool in ["/usr/bin/python3", "dbus-daemon"] + tools where !Self.installed(tool) {
            throw XCTSkip("\(tool) is not installed (make test-deps)")
        }
        guard Self.pythonModulesInstalled else { throw XCTSkip("Debian's python3-secretstorage and python3-keyring are not installed (make test-deps)") }
        initKeychain()
        let scratch = sandbox.root + "/scratch"
        mkdir(scratch, 0o700)
        var environment = sandbox.environment
        environment["LOCKET_BIN"] = binary
        environment["TEST_DIR"] = scratch
        environment["TEST_PASSWORD"] = Self.password
        environment["SECRETSTORAGE_CACHE"] = Self.secretStorageCache
        for (key, value) in extra { environment[key] = value }
        let result = try SecretServiceCaseServer.shared(preloading: Self.clientModules).run(Self.fixtures + "/" + file, name, environment: environment, timeout: timeout)
        if let skip = result.out.split(separator: "\n").first(where: { $0.hasPrefix("SKIP: ") }) {
            throw XCTSkip(String(skip.dropFirst(6)))
        }
        XCTAssertFalse(result.timedOut, "timed out: \(result.summary)", file: testFile, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: testFile, line: line)
        XCTAssertTrue(result.out.contains("OK \(name)"), result.summary, file: testFile, line: line)
    }

    /// Whether Debian's python3 has what the cases import: asked once a test
    /// process (a class's tests share one), not once a test, and found, not
    /// imported (a python3 importing them is 0.17 CPU-s, finding them 0.04;
    /// issue 38). No user site (the sandbox's home has none either).
    static let pythonModulesInstalled: Bool = Spawn.run(
        "/usr/bin/python3", ["-c", "import importlib.util, sys; "
                             + "sys.exit(any(importlib.util.find_spec(m) is None for m in ('jeepney', 'secretstorage', 'cryptography', 'keyring')))"],
        environment: ["PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONNOUSERSITE": "1"], input: .devNull, timeout: 30).status == 0

    static func installed(_ tool: String) -> Bool {
        if tool.hasPrefix("/") { return access(tool, X_OK) == 0 }
        return ["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin"].contains { access("\($0)/\(tool)", X_OK) == 0 }
    }
}
