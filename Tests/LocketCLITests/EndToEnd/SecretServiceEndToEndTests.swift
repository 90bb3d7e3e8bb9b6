import Foundation
import LocketCore
import LocketSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The provider's own behaviour (SPEC §18), each case on a private bus
/// (Tests/Fixtures/secret-service/provider.py).
final class SecretServiceEndToEndTests: SecretServiceCase {
    /// The `slow` keychain of the cases about hashing off the provider's loop
    /// (Argon2id MODERATE, 256 MiB: an unlock long enough to tell), made once
    /// for the class with its device secret: each of the two cases copies it
    /// into its sandbox instead of paying a `locket init --kdf moderate` of its
    /// own (~0.7 CPU-s; issue 38). Its directory holds `slow.keychain` and `device.key`.
    nonisolated(unsafe) private static var slowKeychain: String?

    override class func tearDown() {
        if let made = slowKeychain { try? FileManager.default.removeItem(atPath: made) }
        slowKeychain = nil
        super.tearDown()
    }

    /// The class's `slow` keychain and its device secret put in this test's
    /// sandbox, before the login keychain is made there (bound to that secret too).
    private func installSlowKeychain() throws {
        if Self.slowKeychain == nil {
            var template = Array("/tmp/locket-slow.XXXXXX".utf8CString)
            guard let made = mkdtemp(&template).map({ String(cString: $0) }) else { throw POSIXError(.EIO) }
            mkdir(made + "/run", 0o700)
            let environment = Environment(["HOME": made, "XDG_DATA_HOME": made, "XDG_STATE_HOME": made, "XDG_RUNTIME_DIR": made + "/run",
                                           "LOCKET_DEVICE_KEY": made + "/device.key", "LOCKET_SESSION": "dir"])
            try Keychain.create(at: made + "/slow.keychain", password: SecureBytes(copying: Array(Self.password.utf8)), kdf: .moderate,
                                environment: environment)
            Self.slowKeychain = made
        }
        let made = try XCTUnwrap(Self.slowKeychain)
        for (name, directory) in [("slow.keychain", sandbox.dataHome + "/locket"), ("device.key", sandbox.stateHome + "/locket")] {
            mkdir(directory, 0o700)
            try FileManager.default.copyItem(atPath: made + "/" + name, toPath: directory + "/" + name)
        }
    }

    /// A client public key shorter than 128 bytes and a shared secret with a leading zero byte: both left-padded.
    func testDiffieHellmanPaddingAndShortKeys() throws { try runCase("provider.py", "dh_padding") }

    /// go-keyring finds collection/login in Collections, and Unlock returns exactly the path it sent.
    func testGoKeyringPaths() throws { try runCase("provider.py", "go_keyring_paths") }

    /// locket lock in a shell is seen at once; IsLocked; Unlock's prompt through LOCKET_ASKPASS; Lock seen by the shell; wrong passwords.
    func testLockUnlockAndPrompts() throws { try runCase("provider.py", "lock_and_prompt") }

    /// No askpass and no terminal: the prompt completes dismissed at once; Dismiss(); secret-tool fails rather than hangs.
    func testPromptWithoutAskpassIsDismissed() throws { try runCase("provider.py", "prompt_without_askpass", needs: ["secret-tool"]) }

    /// No askpass: the prompt asks at the provider's terminal, echo off, and the unlock is the shell's too.
    func testPromptAtTheProvidersTerminal() throws {
        for tool in ["/usr/bin/python3", "dbus-daemon"] where !Self.installed(tool) { throw XCTSkip("\(tool) is not installed (make test-deps)") }
        guard Spawn.run("/usr/bin/python3", ["-c", "import jeepney"], environment: sandbox.environment, input: .devNull, timeout: 30).status == 0 else {
            throw XCTSkip("python3-jeepney (with python3-secretstorage) is not installed (make test-deps)")
        }
        initKeychain()
        add("-s", "term", "-a", "x")
        ok("lock")
        let result = TerminalDriver.run(binary, ["secret-service", "--", "/usr/bin/python3", Self.fixtures + "/terminal_client.py"],
                                        answers: [Self.password], environment: sandbox.environment.merging(["LOCKET_ASKPASS": "", "SSH_ASKPASS": ""]) { $1 },
                                        timeout: 30)
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertTrue(result.out.contains("asks to unlock the keychain \(sandbox.loginKeychain). Password:"), result.out)
        XCTAssertTrue(result.out.contains("COMPLETED dismissed=False result=['/org/freedesktop/secrets/collection/login']"), result.out)
        XCTAssertFalse(result.out.contains(Self.password), "the password was echoed: \(result.out)")
        XCTAssertEqual(secret("-s", "term"), Array("s3cret".utf8), "the shell did not see the unlock")
    }

    /// An unlock's key derivation runs off the loop: a lookup in a collection already unlocked answers meanwhile.
    func testLookupsAnswerWhileAnotherCollectionUnlocks() throws {
        try installSlowKeychain()
        try runCase("provider.py", "unlock_does_not_block")
    }

    /// Locked, no askpass: Completed carries Unlock's ao and CreateCollection's o; secret-tool lookup exits 1 at once.
    func testLockedKeychainAnswersLibsecret() throws { try runCase("provider.py", "locked_keychain_answers_libsecret", needs: ["secret-tool"]) }

    /// Item.Delete of a locked item and Set of a locked collection's Label are IsLocked.
    func testLockedObjectsRefuseChanges() throws { try runCase("provider.py", "locked_objects_refuse_changes") }

    /// Lock and Unlock send PropertiesChanged (Locked) and CollectionChanged; Created does not move with a new item.
    func testLockSignalsAndCreated() throws { try runCase("provider.py", "lock_signals_and_created") }

    /// With --app, a caller's path with a newline and escapes reaches the askpass escaped.
    func testCallerPathIsEscapedInPrompts() throws { try runCase("provider.py", "caller_path_escaped_in_prompts") }

    /// A client that disconnects mid-prompt: its askpass is stopped, the provider keeps answering.
    func testClientGoneMidPrompt() throws { try runCase("provider.py", "client_gone_mid_prompt") }

    /// A prompt dismissed while its password is hashed (on the unlock's own thread) unlocks nothing.
    func testAPromptDismissedWhileHashingUnlocksNothing() throws {
        try installSlowKeychain()
        try runCase("provider.py", "dismissed_while_hashing")
    }

    /// A second provider is refused, naming the owner; --replace takes the name and the first stops.
    func testRefusalNamesTheOwnerAndReplace() throws { try runCase("provider.py", "refuse_and_replace") }

    /// The bus going away: the provider exits 0.
    func testBusGoingAway() throws { try runCase("provider.py", "bus_goes_away") }

    /// `locket secret-service -- COMMAND`: a private bus, COMMAND's exit status, nothing left behind.
    func testPrivateBusCommand() throws { try runCase("provider.py", "private_bus", needs: ["secret-tool"]) }

    /// --app EXECUTABLE=ENTITLEMENTS: that program sees and writes only its access groups.
    func testExecutableMap() throws { try runCase("provider.py", "executable_map", needs: ["secret-tool"]) }

    /// ItemCreated/Changed/Deleted, Properties.Get/GetAll/Set, Introspect, aliases, the API's error names.
    func testSignalsPropertiesAndErrors() throws { try runCase("provider.py", "signals_and_properties") }

    /// CreateCollection: a new keychain, its password asked twice at the prompt; Delete removes it and every file beside it
    /// (-attempts too); the key derivation and the password check run off the loop, other clients answered meanwhile.
    func testCreateAndDeleteCollection() throws { try runCase("provider.py", "create_and_delete_collection") }

    /// No keychain yet: secret-tool's store creates the default one through the prompt.
    func testMissingKeychainIsCreatedThroughThePrompt() throws { try runCase("provider.py", "missing_keychain", needs: ["secret-tool"]) }
}

/// Robustness of the provider (SPEC §18): the reliability suite's rules
/// (`make soak` runs the concurrency case at full size: 8 clients x 1,000 requests).
final class SecretServiceReliabilityTests: SecretServiceCase {
    /// The concurrent clients', big_secret's and kill_during_create's.
    override class var clientModules: [String] { ["secretstorage"] }

    /// 8 clients at once, 125 requests each here (1,000 each in `make soak`): every answer right, no item lost.
    func testEightConcurrentClients() throws {
        try runCase("provider.py", "concurrent_clients", environment: ["TEST_REQUESTS": ReliabilityScale.soak ? "1000" : "125"], timeout: 900)
    }

    /// Wrong signatures, unknown algorithms, bad DH keys, bad ciphertexts, a string that is not UTF-8.
    func testMalformedMessages() throws { try runCase("provider.py", "malformed_messages") }

    /// 1,000 attributes stored and found; 100,000 and a 70,000-byte value refused.
    func testHugeAttributeSets() throws { try runCase("provider.py", "huge_attributes") }

    /// A 10 MB secret through a DH session both ways.
    func testTenMegabyteSecret() throws { try runCase("provider.py", "big_secret") }

    /// SIGKILL of the provider while items are being created: the keychain stays whole and serves again.
    func testKillDuringCreateItem() throws { try runCase("provider.py", "kill_during_create", needs: ["secret-tool"]) }
}
