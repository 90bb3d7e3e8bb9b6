import Foundation
import LocketCore
import XCTest

/// SPEC §2: private files, refusal of files other users can write, and clear
/// errors for a missing or foreign file.
final class KeychainFileTests: KeychainTestCase {
    private func mode(_ path: String) -> mode_t {
        var st = stat()
        XCTAssertEqual(stat(path, &st), 0, path)
        return st.st_mode & 0o777
    }

    func testKeychainAndDeviceSecretArePrivate() {
        XCTAssertEqual(mode(temporary.path), 0o600)
        XCTAssertEqual(mode(temporary.deviceSecretPath), 0o600)
        XCTAssertEqual(mode(temporary.directory + "/data/locket"), 0o700)
        XCTAssertEqual(mode(temporary.directory + "/state/locket"), 0o700)
    }

    func testAKeychainOthersCanWriteIsRefused() throws {
        try addGenp("svc", "alice")
        keychain = nil
        for bad: mode_t in [0o602, 0o620, 0o666] {
            chmod(temporary.path, bad)
            XCTAssertKeychainError(.io, try temporary.open(), String(bad, radix: 8))
        }
        chmod(temporary.path, 0o644)
        XCTAssertNoThrow(try temporary.open(), "readable by others is the user's choice; writable is not")
        chmod(temporary.path, 0o600)
        XCTAssertEqual(try allGenp(in: temporary.open()).count, 1)
    }

    func testASymbolicLinkIsRefused() throws {
        let link = temporary.directory + "/link.keychain"
        XCTAssertEqual(symlink(temporary.path, link), 0)
        XCTAssertKeychainError(.io, try Keychain.open(at: link, environment: temporary.environment))
    }

    func testAFileThatIsNotAKeychainIsInvalidKeychain() throws {
        let junk = temporary.directory + "/junk.keychain"
        XCTAssertTrue(FileManager.default.createFile(atPath: junk, contents: Data("not a database at all, just text".utf8)))
        chmod(junk, 0o600)
        XCTAssertKeychainError(.invalidKeychain, try Keychain.open(at: junk, environment: temporary.environment))
    }

    func testCreateMakesMissingDirectories() throws {
        let nested = temporary.directory + "/a/b/c/nested.keychain"
        try Keychain.create(at: nested, password: nil, environment: temporary.environment)
        XCTAssertFalse(try Keychain.open(at: nested, environment: temporary.environment).hasPassword)
        XCTAssertEqual(mode(temporary.directory + "/a/b"), 0o700)
    }

    func testCreateLeavesNoTemporaryFilesBehind() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: temporary.directory + "/data/locket")
        XCTAssertEqual(files.filter { !$0.hasPrefix("test.keychain") }, [])
    }

    func testEmptyAccessGroupIsRefused() throws {
        XCTAssertKeychainError(.param, try addGenp("svc", "alice", group: ""))
        XCTAssertEqual(try allGenp().count, 0)
    }

    /// A leftover non-empty WAL where a keychain was deleted would be replayed
    /// into a new keychain made at that path: init refuses it, names it, and
    /// leaves it; an empty one is harmless.
    func testInitRefusesALeftoverJournalOfAKeychainThatIsGone() throws {
        for suffix in ["-wal", "-journal"] {
            let path = temporary.directory + "/fresh" + suffix + ".keychain"
            XCTAssertTrue(FileManager.default.createFile(atPath: path + suffix, contents: Data(repeating: 7, count: 4096)))
            do {
                try Keychain.create(at: path, password: nil, environment: temporary.environment)
                XCTFail("init made a keychain over a leftover \(suffix)")
            } catch let error as KeychainError {
                XCTAssertEqual(error.code, .io)
                XCTAssertTrue(error.description.contains(path + suffix), "\(error)")
            }
            XCTAssertFalse(FileManager.default.fileExists(atPath: path), "nothing made")
            XCTAssertTrue(FileManager.default.fileExists(atPath: path + suffix), "the leftover is kept")
            // Empty, it is harmless.
            XCTAssertTrue(FileManager.default.createFile(atPath: path + suffix, contents: Data()))
            XCTAssertNoThrow(try Keychain.create(at: path, password: nil, environment: temporary.environment))
            XCTAssertFalse(try Keychain.open(at: path, environment: temporary.environment).hasPassword)
        }
    }
}
