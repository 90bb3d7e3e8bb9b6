import Foundation
import XCTest

/// Prompts at a real terminal: locket runs on a pseudo-terminal made by
/// Python's pty module, which answers each prompt and records the screen, so
/// we can check that passwords are asked for twice and never echoed.
final class TerminalPromptTests: XCTestCase {
    private var home: URL!

    override func setUpWithError() throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("locket-tty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home.appendingPathComponent("run"), withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: home.path)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: home) }

    /// Runs locket under a pty (TerminalDriver), typing `answers` one per prompt.
    private func runAtTerminal(_ arguments: [String], answers: [String]) throws -> (status: Int32, screen: String) {
        let result = TerminalDriver.run(try locketBinary(), arguments, answers: answers,
                                        environment: ["PATH": "/usr/bin:/bin", "HOME": home.path,
                                                      "XDG_RUNTIME_DIR": home.appendingPathComponent("run").path, "LOCKET_SESSION": "dir"],
                                        timeout: 20)
        XCTAssertFalse(result.timedOut, result.summary)
        return (result.status ?? -1, result.out)
    }

    private func locketBinary() throws -> String {
        guard let path = LocketBinary.path else { throw XCTSkip("no locket binary built") }
        return path
    }

    func testInitAsksTwiceWithoutEchoAndAddPromptsForTheSecret() throws {
        let created = try runAtTerminal(["init", "--kdf", "interactive"], answers: ["tty-password-1", "tty-password-1"])
        XCTAssertEqual(created.status, 0, created.screen)
        XCTAssertTrue(created.screen.contains("New password for"), created.screen)
        XCTAssertTrue(created.screen.contains("Again:"), created.screen)
        XCTAssertFalse(created.screen.contains("tty-password-1"), "the password was echoed: \(created.screen)")

        let added = try runAtTerminal(["add", "-s", "tty", "-a", "me", "-w"], answers: ["typed-secret-9", "typed-secret-9"])
        XCTAssertEqual(added.status, 0, added.screen)
        XCTAssertFalse(added.screen.contains("typed-secret-9"), "the secret was echoed: \(added.screen)")

        let found = try runAtTerminal(["find", "-s", "tty", "-a", "me", "-w"], answers: [])
        XCTAssertEqual(found.status, 0, found.screen)
        XCTAssertTrue(found.screen.contains("typed-secret-9"), found.screen)
    }

    /// Issue 11, defect 9: the prompt names the keychain's path, the user's
    /// text; its control and bidirectional characters are shown escaped.
    func testThePromptEscapesTheKeychainPath() throws {
        let path = home.path + "/k\u{1b}[2J\u{9b}\u{202e}.keychain"
        let created = try runAtTerminal(["-k", path, "init", "--kdf", "interactive"], answers: ["tty-password-2", "tty-password-2"])
        XCTAssertEqual(created.status, 0, created.screen)
        XCTAssertTrue(created.screen.contains("New password for \(home.path)/k\\x1b[2J\\u{9b}\\u{202e}.keychain: "), created.screen)
        for raw in ["\u{1b}", "\u{9b}", "\u{202e}"] { XCTAssertFalse(created.screen.contains(raw), created.screen.debugDescription) }
    }

    func testMismatchedPasswordsCreateNothing() throws {
        let result = try runAtTerminal(["init"], answers: ["first-one", "second-one"])
        XCTAssertEqual(result.status, 206, result.screen)
        XCTAssertTrue(result.screen.contains("do not match"), result.screen)
        let keychain = home.appendingPathComponent(".local/share/locket/login.keychain").path
        XCTAssertFalse(FileManager.default.fileExists(atPath: keychain))
    }

    func testUnlockAtTheTerminal() throws {
        XCTAssertEqual(try runAtTerminal(["init", "--kdf", "interactive"], answers: ["pw-unlock", "pw-unlock"]).status, 0)
        XCTAssertEqual(try runAtTerminal(["lock"], answers: []).status, 0)
        let wrong = try runAtTerminal(["unlock"], answers: ["not-it"])
        XCTAssertEqual(wrong.status, 51, wrong.screen)
        let right = try runAtTerminal(["unlock"], answers: ["pw-unlock"])
        XCTAssertEqual(right.status, 0, right.screen)
        XCTAssertFalse(right.screen.contains("pw-unlock"), right.screen)
    }
}
