import Glibc
import LocketCore
import XCTest

/// The CLI hands the engine `Environment.process`, which reads variables with
/// getenv(3) when asked instead of copying the whole environment at start-up.
final class EnvironmentTests: XCTestCase {
    func testProcessEnvironmentReadsVariablesWhenAsked() {
        let name = "LOCKET_TEST_PROBE_\(getpid())"
        XCTAssertNil(try Environment.process[name])
        setenv(name, "first", 1)
        defer { unsetenv(name) }
        XCTAssertEqual(try Environment.process[name], "first", "a variable set after start-up is seen")
        setenv(name, "", 1)
        XCTAssertEqual(try Environment.process[name], "")
        let all = Environment.process.all
        XCTAssertEqual(all.filter { $0.name == Array(name.utf8) }.count, 1)
        XCTAssertEqual(all.map(\.name), all.map(\.name).sorted { $0.lexicographicallyPrecedes($1) }, "exec hands variables on sorted by name")
    }

    /// Issue 11 item 10: Swift would replace the bad bytes with U+FFFD.
    func testAValueThatIsNotUTF8IsRefusedNamingTheVariable() throws {
        let name = "LOCKET_TEST_BYTES_\(getpid())"
        let value: [CChar] = [0x2f, 0x78, CChar(bitPattern: 0xff), 0]
        XCTAssertEqual(setenv(name, value, 1), 0)
        defer { unsetenv(name) }
        do {
            _ = try Environment.process[name]
            XCTFail("a value that is not UTF-8 was accepted")
        } catch let error as KeychainError {
            XCTAssertEqual(error.code, .param)
            XCTAssertEqual(error.message, "\(name) is not valid UTF-8")
        }
        let entry = Environment.process.all.first { $0.nameText == name }
        XCTAssertEqual(entry?.value, [0x2f, 0x78, 0xff], "exec hands the bytes on as they are")
    }

    func testGivenVariablesResolvePathsAsBefore() throws {
        let env = Environment(["HOME": "/home/u", "XDG_DATA_HOME": "relative/ignored", "LOCKET_KEYCHAIN": "work"])
        XCTAssertEqual(try env.keychainPath(nil), "/home/u/.local/share/locket/work.keychain")
        XCTAssertEqual(try env.keychainPath("/tmp/k"), "/tmp/k")
        XCTAssertEqual(try env.deviceSecretPath(), "/home/u/.local/state/locket/device.key")
        XCTAssertEqual(env.all.map(\.nameText), ["HOME", "LOCKET_KEYCHAIN", "XDG_DATA_HOME"])
        XCTAssertThrowsError(try Environment([:]).keychainPath(nil), "no HOME, no keychain path")
    }
}
