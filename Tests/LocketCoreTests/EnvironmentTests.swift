import Glibc
import LocketCore
import XCTest

/// The CLI hands the engine `Environment.process`, which reads variables with
/// getenv(3) when asked instead of copying the whole environment at start-up.
final class EnvironmentTests: XCTestCase {
    func testProcessEnvironmentReadsVariablesWhenAsked() {
        let name = "LOCKET_TEST_PROBE_\(getpid())"
        XCTAssertNil(Environment.process[name])
        setenv(name, "first", 1)
        defer { unsetenv(name) }
        XCTAssertEqual(Environment.process[name], "first", "a variable set after start-up is seen")
        setenv(name, "", 1)
        XCTAssertEqual(Environment.process[name], "")
        let all = Environment.process.all
        XCTAssertEqual(all.filter { $0.name == name }.count, 1)
        XCTAssertEqual(all.map(\.name), all.map(\.name).sorted(), "exec hands variables on sorted by name")
    }

    func testGivenVariablesResolvePathsAsBefore() throws {
        let env = Environment(["HOME": "/home/u", "XDG_DATA_HOME": "relative/ignored", "LOCKET_KEYCHAIN": "work"])
        XCTAssertEqual(try env.keychainPath(nil), "/home/u/.local/share/locket/work.keychain")
        XCTAssertEqual(try env.keychainPath("/tmp/k"), "/tmp/k")
        XCTAssertEqual(try env.deviceSecretPath(), "/home/u/.local/state/locket/device.key")
        XCTAssertEqual(env.all.map(\.name), ["HOME", "LOCKET_KEYCHAIN", "XDG_DATA_HOME"])
        XCTAssertThrowsError(try Environment([:]).keychainPath(nil), "no HOME, no keychain path")
    }
}
