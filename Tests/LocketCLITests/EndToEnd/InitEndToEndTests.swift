import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `init`, choosing the keychain (-k NAME, -k PATH, LOCKET_KEYCHAIN), and a missing keychain.
final class EndToEndInitTests: EndToEndCase {
    func testInitWithPasswordOnStdinCreatesPrivateFiles() {
        let result = locket("init", "--password-stdin", input: .text(Self.password + "\n"))
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertEqual(result.stdout, [])
        XCTAssertEqual(mode(sandbox.loginKeychain).map { $0 & 0o077 }, 0, "keychain file must be private")
        XCTAssertEqual(mode(sandbox.dataHome + "/locket").map { $0 & 0o077 }, 0, "keychain directory must be private")
        XCTAssertEqual(mode(sandbox.stateHome + "/locket/device.key"), 0o600, "device secret must be 0600")
        // The default Argon2id cost is libsodium's MODERATE (issue 11: set by the CLI, not a test switch).
        let kdf = try? ReliabilityDatabase(sandbox.loginKeychain, readOnly: true).rows("SELECT value FROM meta WHERE name = 'kdf'").first?[0]
        XCTAssertEqual(kdf.map { $0.count == 32 ? Array($0[16..<32]) : $0 }, [0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0x10, 0, 0, 0], "ops 3, 256 MiB")
        // The generation record of this keychain is private too.
        let records = ((try? FileManager.default.contentsOfDirectory(atPath: sandbox.stateHome + "/locket")) ?? []).filter { $0.hasSuffix(".generation") }
        XCTAssertEqual(records.count, 1)
        for name in records { XCTAssertEqual(mode(sandbox.stateHome + "/locket/" + name), 0o600) }
        // The creator is unlocked right away.
        add("-s", "svc", "-a", "me", secret: "value")
        XCTAssertEqual(secret("-s", "svc"), Array("value".utf8))
        // SQLite's companions and the session are private too (umask 077).
        for suffix in ["-wal", "-shm"] {
            if let m = mode(sandbox.loginKeychain + suffix) { XCTAssertEqual(m & 0o077, 0, "\(suffix) is \(String(m, radix: 8))") }
        }
        let sessionDir = sandbox.runtimeDir + "/locket"
        XCTAssertEqual(mode(sessionDir), 0o700, "session directory")
        let sessions = (try? FileManager.default.contentsOfDirectory(atPath: sessionDir)) ?? []
        XCTAssertFalse(sessions.isEmpty, "LOCKET_SESSION=dir keeps the session in $XDG_RUNTIME_DIR/locket")
        for name in sessions { XCTAssertEqual(mode(sessionDir + "/" + name), 0o600, name) }
        // lock --all removes every session file.
        ok("lock", "--all")
        XCTAssertEqual((try? FileManager.default.contentsOfDirectory(atPath: sessionDir)) ?? [], [])
    }

    func testInitReadsThePasswordFromStdinWithoutTheFlag() {
        // No terminal: the password comes from stdin even without --password-stdin.
        let result = locket("init", "--kdf", "interactive", input: .text("pw-from-pipe\n"))
        XCTAssertEqual(result.status, 0, result.summary)
        ok("lock")
        expect(0, "unlock", input: .text("pw-from-pipe\n"))
    }

    func testInitWithEmptyPasswordOnStdinFails() {
        let result = locket("init", "--password-stdin", input: .text("\n"))
        XCTAssertNotEqual(result.status, 0, result.summary)
        XCTAssertTrue(result.err.hasPrefix("locket: error: "), result.summary)
        XCTAssertNil(mode(sandbox.loginKeychain), "no keychain may be left behind")
    }

    func testInitNoPassword() {
        ok("init", "--no-password")
        XCTAssertNotNil(mode(sandbox.loginKeychain))
        add("-s", "svc", secret: "v")
        XCTAssertEqual(secret("-s", "svc"), Array("v".utf8))
    }

    func testInitTwiceIsDuplicateKeychain() {
        initKeychain()
        let result = expect(48, "init", "--password-stdin", input: .text("other\n"))
        assertError(result, "errSecDuplicateKeychain", -25296)
        // The first keychain still opens with its own password.
        ok("lock")
        expect(0, "unlock", "--password-stdin", input: .text(Self.password + "\n"))
        let again = expect(48, "init", "--no-password")
        assertError(again, "errSecDuplicateKeychain", -25296)
    }

    func testMissingKeychainIsNoSuchKeychainForEveryCommand() {
        let commands: [[String]] = [
            ["find", "-s", "x"], ["find", "-s", "x", "-w"], ["add", "-s", "x"], ["update", "-s", "x", "--set", "comment=y"],
            ["delete", "-s", "x"], ["delete", "--all"], ["dump"], ["dump", "--data"], ["lock"], ["lock", "--all"],
            ["unlock", "--password-stdin"], ["-k", "nosuch", "find"],
        ]
        for args in commands {
            let result = locket(args, input: .text("pw\n"))
            XCTAssertEqual(result.status, 50, result.summary)
            assertError(result, "errSecNoSuchKeychain", -25294)
            // The hint names the keychain that was asked for: `locket -k nosuch init`, not the login one.
            let hint = args.first == "-k" ? "locket -k \(args[1]) init" : "'locket init'"
            XCTAssertTrue(result.err.contains(hint), "hint to run \(hint) missing: \(result.summary)")
        }
        XCTAssertNil(mode(sandbox.loginKeychain), "no command but init may create a keychain")
    }

    func testKeychainByName() {
        initKeychain("work")
        XCTAssertNotNil(mode(sandbox.dataHome + "/locket/work.keychain"), "-k NAME is $XDG_DATA_HOME/locket/NAME.keychain")
        XCTAssertNil(mode(sandbox.loginKeychain))
        add("-k", "work", "-s", "svc", secret: "in-work")
        XCTAssertEqual(secret("-k", "work", "-s", "svc"), Array("in-work".utf8))
        // The default keychain does not exist.
        expect(50, "find", "-s", "svc")
        // The global option may also come after the command.
        XCTAssertEqual(secret("-s", "svc", "--keychain", "work"), Array("in-work".utf8))
    }

    func testKeychainByPath() {
        let path = sandbox.root + "/elsewhere/my.db"
        initKeychain(path)
        XCTAssertNotNil(mode(path))
        XCTAssertNil(mode(sandbox.loginKeychain))
        add("-k", path, "-s", "svc", secret: "in-path")
        XCTAssertEqual(secret("-k", path, "-s", "svc"), Array("in-path".utf8))
        expect(50, "-k", sandbox.root + "/elsewhere/other.db", "find")
    }

    func testLocketKeychainEnvironment() {
        let byName = ["LOCKET_KEYCHAIN": "envname"]
        expect(0, "init", "--password-stdin", "--kdf", "interactive", input: .text("pw\n"), environment: byName)
        XCTAssertNotNil(mode(sandbox.dataHome + "/locket/envname.keychain"))
        expect(0, "add", "-s", "svc", "-w", input: .text("env-secret\n"), environment: byName)
        XCTAssertEqual(expect(0, "find", "-s", "svc", "-w", environment: byName).out, "env-secret\n")
        expect(50, "find", "-s", "svc")

        let path = sandbox.root + "/env-path.keychain"
        let byPath = ["LOCKET_KEYCHAIN": path]
        expect(0, "init", "--no-password", environment: byPath)
        XCTAssertNotNil(mode(path))
        // -k wins over LOCKET_KEYCHAIN.
        XCTAssertEqual(expect(0, "-k", "envname", "find", "-s", "svc", "-w", environment: byPath).out, "env-secret\n")
        expect(44, "find", "-s", "svc", environment: byPath)
    }

    func testRelativeXDGPathsAreIgnored() {
        // The XDG spec: relative paths are invalid and must be ignored.
        let env = ["XDG_DATA_HOME": "relative/data", "XDG_STATE_HOME": "relative/state"]
        expect(0, "init", "--password-stdin", "--kdf", "interactive", input: .text("pw\n"), environment: env)
        XCTAssertNotNil(mode(sandbox.home + "/.local/share/locket/login.keychain"), "keychain not under $HOME/.local/share")
        XCTAssertNotNil(mode(sandbox.home + "/.local/state/locket/device.key"), "device secret not under $HOME/.local/state")
        XCTAssertNil(mode(sandbox.loginKeychain))
        expect(0, "add", "-s", "svc", "-w", input: .text("v\n"), environment: env)
        XCTAssertEqual(expect(0, "find", "-s", "svc", "-w", environment: env).out, "v\n")
    }

    func testTwoKeychainsHaveSeparateSessions() {
        initKeychain("a", password: "pa")
        initKeychain("b", password: "pb")
        add("-k", "a", "-s", "svc", secret: "A")
        add("-k", "b", "-s", "svc", secret: "B")
        ok("-k", "a", "lock")
        expect(36, "-k", "a", "find", "-s", "svc", "-w")
        XCTAssertEqual(secret("-k", "b", "-s", "svc"), Array("B".utf8))
        // b's password does not open a.
        expect(51, "-k", "a", "unlock", "--password-stdin", input: .text("pb\n"))
        expect(0, "-k", "a", "unlock", "--password-stdin", input: .text("pa\n"))
        XCTAssertEqual(secret("-k", "a", "-s", "svc"), Array("A".utf8))
    }
}
