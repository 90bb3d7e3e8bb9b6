import Foundation
@testable import LocketCLI
import LocketCore
import LocketTestSupport
import XCTest

/// Issue 15: a pass store made by the real `pass` with a real gpg key in a
/// throwaway GNUPGHOME, decrypted through locket's gpg runner.
final class PassMigrationTests: XCTestCase {
    private var root = ""
    private var environment: [String: String] = [:]

    override func setUpWithError() throws {
        for tool in ["pass", "gpg", "gpgconf"] where Self.find(tool) == nil {
            throw XCTSkip("\(tool) is not installed (Debian packages pass and gnupg; make test-deps installs them)")
        }
        // Short: gpg-agent's socket path must fit in a sockaddr_un.
        root = "/tmp/lkp-\(getpid())-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: root + "/gnupg", withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        environment = [
            "HOME": root, "GNUPGHOME": root + "/gnupg", "PASSWORD_STORE_DIR": root + "/store",
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "LC_ALL": "C",
        ]
        // Ed25519 with a Curve25519 encryption subkey ("future-default"): gnupg
        // 2.2's "default" is RSA-3072, whose generation cost gpg-agent ~1 CPU-s
        // a test (outside the runner's figures: the agent is a daemon) for a
        // key the test needs only to be gpg's own (issue 38).
        try run("gpg", ["--batch", "--passphrase", "", "--quick-gen-key", "Locket Test <test@locket.invalid>", "future-default", "default", "never"])
        try run("pass", ["init", "test@locket.invalid"])
    }

    override func tearDown() {
        if !root.isEmpty {
            _ = try? run("gpgconf", ["--kill", "gpg-agent"])
            try? FileManager.default.removeItem(atPath: root)
        }
    }

    static func find(_ name: String) -> String? { executableOnPath(name) }

    @discardableResult
    private func run(_ tool: String, _ arguments: [String], input: String = "") throws -> String {
        let result = Spawn.run(Self.find(tool)!, arguments, environment: environment, input: .text(input), timeout: 120)
        guard result.status == 0 else {
            XCTFail("\(tool) \(arguments.joined(separator: " ")) failed: \(result.err)")
            throw CancellationError()
        }
        return result.out
    }

    func testStoreMadeByPassDecryptedWithGPG() throws {
        try run("pass", ["insert", "-m", "web/github.com/alice"], input: "gh-secret ü\nurl: https://github.com/login\nnote: personal\n")
        try run("pass", ["insert", "-m", "email"], input: "m41l\nlogin: alice@example.com\nURL: imaps://mail.example.com:993\notpauth://totp/Mail:alice?secret=JBSWY3DPEHPK3PXP\nrecovery: 1111-2222\n")
        try run("pass", ["insert", "-m", "servers/db01"], input: "pg-pass\n")
        try run("pass", ["insert", "-m", "empty"], input: "")
        XCTAssertEqual(try run("pass", ["show", "servers/db01"]), "pg-pass\n", "the store works for pass itself")
        // A file gpg can't decrypt, and a link that is not followed.
        try Data("not an OpenPGP message".utf8).write(to: URL(fileURLWithPath: root + "/store/broken.gpg"))
        try FileManager.default.createSymbolicLink(atPath: root + "/store/link.gpg", withDestinationPath: root + "/store/email.gpg")

        var failures: [String] = []
        let gpg = try GPGDecrypt(environment: Environment(environment)) { failures.append(String(decoding: $0, as: UTF8.self)) }
        var items: [MigrationItem] = []
        var skipped: [MigrationSkip] = []
        try PassStore.read(directory: try PassStore.defaultDirectory(Environment(environment)), decrypt: gpg.decrypt) {
            switch $0 {
            case .item(let item): items.append(item)
            case .skipped(let skip): skipped.append(skip)
            }
        }
        func item(_ origin: String) throws -> MigrationItem { try XCTUnwrap(items.first { $0.origin == origin }, "\(items.map(\.origin))") }
        func text(_ item: MigrationItem, _ attribute: Attribute) -> String? { item.attributes[attribute].map { String(decoding: $0, as: UTF8.self) } }

        let github = try item("web/github.com/alice")
        XCTAssertEqual(github.itemClass, .internetPassword)
        XCTAssertEqual(text(github, .server), "github.com")
        XCTAssertEqual(text(github, .path), "login")
        XCTAssertEqual(text(github, .account), "alice")
        XCTAssertEqual(text(github, .label), "web/github.com/alice")
        XCTAssertEqual(text(github, .comment), "note: personal")
        XCTAssertEqual(String(decoding: github.data.bytes, as: UTF8.self), "gh-secret ü")

        let mail = try item("email")
        XCTAssertEqual(text(mail, .account), "alice@example.com")
        XCTAssertEqual(text(mail, .protocol), "imps")
        XCTAssertEqual(text(mail, .comment), "recovery: 1111-2222")
        let otp = try item("email (one-time code)")
        XCTAssertEqual(text(otp, .service), "otp:mail.example.com")
        XCTAssertEqual(String(decoding: otp.data.bytes, as: UTF8.self), "otpauth://totp/Mail:alice?secret=JBSWY3DPEHPK3PXP")

        let db = try item("servers/db01")
        XCTAssertEqual(db.itemClass, .genericPassword)
        XCTAssertEqual(text(db, .service), "servers")
        XCTAssertEqual(text(db, .account), "db01")
        XCTAssertEqual(String(decoding: db.data.bytes, as: UTF8.self), "pg-pass")
        XCTAssertEqual(try item("empty").data.count, 0)

        XCTAssertEqual(skipped.first { $0.origin == "broken" }?.reason, "gpg exited with status 2")
        XCTAssertEqual(skipped.first { $0.origin == "link" }?.reason, "it is a symbolic link, which locket does not follow")
        XCTAssertEqual(failures.count, 1, "gpg's stderr is passed on only for the failure")
        XCTAssertFalse(failures.joined().contains("gh-secret"))
        XCTAssertEqual(items.count, 5)
        XCTAssertEqual(skipped.count, 2)
    }

    /// gpg that can't be started stops the walk instead of skipping every file.
    func testMissingGPGStopsTheImport() throws {
        try run("pass", ["insert", "-m", "one"], input: "x\n")
        var gpg = try GPGDecrypt(environment: Environment(environment)) { _ in }
        gpg.program = "locket-no-such-gpg"
        XCTAssertThrowsError(try PassStore.read(directory: root + "/store", decrypt: gpg.decrypt) { _ in }) {
            XCTAssertEqual(($0 as? KeychainError)?.code, .io)
        }
    }
}
