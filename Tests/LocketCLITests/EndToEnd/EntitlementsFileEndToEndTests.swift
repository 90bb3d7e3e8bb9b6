import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 11 items 7 and 8 (SPEC §2): where an entitlements file may come
/// from. A FIFO (by `-e` or `LOCKET_ENTITLEMENTS`) is refused at once instead
/// of waiting forever for a writer; a file another user owns, or one in a
/// directory others can write (so they can replace it), is refused: either
/// would let that user widen the app's access groups at will.
final class EntitlementsFileEndToEndTests: EndToEndCase {
    /// Engine and command-line logic: in-process through `CLI.run` (issue 38);
    /// what needs the binary here (another process, a terminal, its own name) runs it.
    override class var inProcess: Bool { true }

    override class func tearDown() {
        LocalAccounts.removeAll()
        super.tearDown()
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    /// Runs with a short deadline: the old behaviour was to hang.
    private func quick(_ arguments: [String], environment extra: [String: String] = [:]) -> RunResult {
        var environment = sandbox.environment
        for (name, value) in extra { environment[name] = value }
        return Spawn.run(binary, arguments, environment: environment, input: .devNull, timeout: 5)
    }

    private func assertRefused(_ result: RunResult, _ path: String, _ problem: String,
                               file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(result.timedOut, "waited instead of refusing: \(result.summary)", file: file, line: line)
        XCTAssertEqual(result.status, 206, result.summary, file: file, line: line)
        let message = result.errLines.first ?? ""
        XCTAssertTrue(message.hasPrefix("locket: error: \(path): "), "must name the file first: \(message)", file: file, line: line)
        XCTAssertTrue(message.contains(problem), "must say what is wrong (\(problem)): \(message)", file: file, line: line)
        XCTAssertTrue(message.hasSuffix("(errSecParam -50)"), message, file: file, line: line)
        XCTAssertEqual(result.stdout, [], file: file, line: line)
    }

    // MARK: - Item 7: a FIFO

    func testAFIFOAsEntitlementsIsRefusedAtOnce() {
        let fifo = sandbox.root + "/app.entitlements"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        assertRefused(quick(["-e", fifo, "find", "-s", "svc"]), fifo, "not a regular file (a FIFO)")
        assertRefused(quick(["find", "-s", "svc"], environment: ["LOCKET_ENTITLEMENTS": fifo]), fifo, "not a regular file (a FIFO)")
        assertRefused(quick(["-e", fifo, "unlock", "--password-stdin"]), fifo, "not a regular file")
    }

    // MARK: - Item 8: whose file, in whose directory

    func testAnEntitlementsFileOwnedByAnotherUserIsRefused() throws {
        let other = try LocalAccounts.account("other")
        let path = writeEntitlements("theirs.json", #"{"keychain-access-groups": ["T.app"]}"#, mode: 0o644)
        XCTAssertEqual(chown(path, other.uid, other.gid), 0)
        assertRefused(quick(["-e", path, "find", "-s", "svc"]), path, "owned by another user (uid \(other.uid))")
        assertRefused(quick(["find", "-s", "svc"], environment: ["LOCKET_ENTITLEMENTS": path]), path, "owned by another user")
        // The same file as the caller's own is accepted.
        XCTAssertEqual(chown(path, geteuid(), getegid()), 0)
        XCTAssertEqual(quick(["-e", path, "find", "-s", "svc"]).status, 44)
    }

    func testAnEntitlementsFileInADirectoryOfAnotherUserIsRefused() throws {
        let other = try LocalAccounts.account("other")
        let directory = sandbox.root + "/theirs"
        XCTAssertEqual(mkdir(directory, 0o755), 0)
        let path = directory + "/app.json"
        XCTAssertNoThrow(try Data(#"{"keychain-access-groups": ["T.app"]}"#.utf8).write(to: URL(fileURLWithPath: path)))
        XCTAssertEqual(chmod(path, 0o644), 0)
        XCTAssertEqual(quick(["-e", path, "find", "-s", "svc"]).status, 44)
        // The file is still the caller's, but the directory's owner can replace it.
        XCTAssertEqual(chown(directory, other.uid, other.gid), 0)
        assertRefused(quick(["-e", path, "find", "-s", "svc"]), path, "its directory \(directory) belongs to another user (uid \(other.uid))")
    }

    func testAnEntitlementsFileInADirectoryOthersCanWriteIsRefused() {
        let directory = sandbox.root + "/ci"
        XCTAssertEqual(mkdir(directory, 0o700), 0)
        let path = directory + "/app.json"
        XCTAssertNoThrow(try Data(#"{"keychain-access-groups": ["T.app"]}"#.utf8).write(to: URL(fileURLWithPath: path)))
        XCTAssertEqual(chmod(path, 0o644), 0)
        for mode: mode_t in [0o777, 0o775, 0o757] {
            XCTAssertEqual(chmod(directory, mode), 0)
            assertRefused(quick(["-e", path, "find", "-s", "svc"]), path, "its directory \(directory) is writable by other users")
        }
        // Through a symbolic link in a private directory: the directory that counts is the file's.
        let link = sandbox.root + "/link.json"
        XCTAssertEqual(symlink(path, link), 0)
        assertRefused(quick(["-e", link, "find", "-s", "svc"]), link, "its directory \(directory) is writable by other users")
        // A sticky directory (like /tmp) lets nobody replace the caller's own file.
        XCTAssertEqual(chmod(directory, 0o1777), 0)
        XCTAssertEqual(quick(["-e", path, "find", "-s", "svc"]).status, 44)
        XCTAssertEqual(quick(["-e", link, "find", "-s", "svc"]).status, 44)
        XCTAssertEqual(chmod(directory, 0o755), 0)
        XCTAssertEqual(quick(["-e", path, "find", "-s", "svc"]).status, 44)
    }
}
