import Foundation
import LocketTestSupport
import Security
import XCTest

/// The Security module and the command line on the same files (SPEC §19):
/// items either adds the other reads, persistent references either prints
/// the other takes, lock state set by `locket lock`/`unlock` seen by the
/// module at its next call, signatures openssl verifies, ECIES that
/// `locket key decrypt` opens, and user presence asked at a real terminal.
/// The release binary through LOCKET_BIN, as the other end-to-end tests.
final class SecurityEndToEndTests: SecurityTestCase {
    @discardableResult
    private func expect(_ status: Int32, _ arguments: [String], input: Input = .devNull,
                        file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        let result = try locket(arguments, input: input)
        XCTAssertEqual(result.status, status, result.summary, file: file, line: line)
        return result
    }

    func testAnItemAddedInSwiftIsFoundByTheCommandLine() throws {
        let item: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "github",
                                   kSecAttrAccount as String: "deploy", kSecValueData as String: Data("ghp_from_swift".utf8),
                                   kSecAttrComment as String: "made by an app", kSecReturnPersistentRef as String: true]
        var result: CFTypeRef?
        XCTAssertEqual(SecItemAdd(item as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual(try expect(0, ["find", "-s", "github", "-a", "deploy", "-w"]).out, "ghp_from_swift\n")
        let ref = String(decoding: try XCTUnwrap(result as? Data), as: UTF8.self)
        XCTAssertEqual(try expect(0, ["find", "--ref", ref, "-w"]).out, "ghp_from_swift\n", "the persistent reference is the CLI's --ref")
        XCTAssertEqual(try expect(0, ["find", "--json", "-s", "github"]).jsonObject()["comment"] as? String, "made by an app")
    }

    func testAnItemAddedByTheCommandLineIsFoundInSwift() throws {
        try expect(0, ["add", "--class", "inet", "-s", "git.example.com", "-r", "https", "-a", "alice", "-P", "8443", "-w"],
                   input: .text("from the shell\n"))
        let shown = try expect(0, ["find", "--class", "inet", "-s", "git.example.com", "--show-ref", "--json"]).jsonObject()
        let ref = try XCTUnwrap(shown["persistentRef"] as? String)
        var result: CFTypeRef?
        let query: [String: Any] = [kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "git.example.com",
                                    kSecAttrProtocol as String: kSecAttrProtocolHTTPS, kSecAttrPort as String: 8443,
                                    kSecReturnAttributes as String: true, kSecReturnData as String: true, kSecReturnPersistentRef as String: true]
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        let found = try XCTUnwrap(result as? [String: Any])
        XCTAssertEqual(found[kSecValueData as String] as? Data, Data("from the shell".utf8))
        XCTAssertEqual(found[kSecAttrAccount as String] as? String, "alice")
        XCTAssertEqual(found[kSecValuePersistentRef as String] as? Data, Data(ref.utf8))
        XCTAssertEqual(SecItemCopyMatching([kSecValuePersistentRef: Data(ref.utf8), kSecReturnData: true] as CFDictionary, &result), errSecSuccess)
        // And deleted from Swift, gone for the shell.
        XCTAssertEqual(SecItemDelete([kSecClass: kSecClassInternetPassword, kSecAttrServer: "git.example.com"] as CFDictionary), errSecSuccess)
        try expect(44, ["find", "--class", "inet", "-s", "git.example.com"])
    }

    /// The session is the command line's: `locket lock` in a shell locks the
    /// app's next call, `locket unlock` opens it again; protection classes as there.
    func testLockAndUnlockFromTheShell() throws {
        let read: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "token", kSecReturnData as String: true]
        var background = read
        background[kSecAttrAccount as String] = "background"
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "token", kSecValueData: Data("t".utf8)] as CFDictionary, nil),
                       errSecSuccess)
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "background", kSecValueData: Data("b".utf8),
                                   kSecAttrAccessible: kSecAttrAccessibleAfterFirstUnlock] as CFDictionary, nil), errSecSuccess)
        XCTAssertEqual(SecItemCopyMatching(read as CFDictionary, nil), errSecSuccess)
        try expect(0, ["lock"])
        XCTAssertEqual(SecItemCopyMatching(read as CFDictionary, nil), errSecInteractionNotAllowed)
        XCTAssertEqual(SecItemCopyMatching(background as CFDictionary, nil), errSecSuccess)
        try expect(0, ["lock", "--all"])
        XCTAssertEqual(SecItemCopyMatching(background as CFDictionary, nil), errSecInteractionNotAllowed)
        try expect(0, ["unlock", "--password-stdin"], input: .text(password + "\n"))
        XCTAssertEqual(SecItemCopyMatching(read as CFDictionary, nil), errSecSuccess)
        // A write from the shell is seen at once.
        try expect(0, ["update", "-a", "token", "-w"], input: .text("rotated\n"))
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(read as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual(result as? Data, Data("rotated".utf8))
    }

    func testASignatureVerifiesWithOpenSSL() throws {
        // Secure Enclave keys live in a TPM (SPEC §21): a swtpm of the test's own.
        try useSoftwareTPM()
        let fixtures = try CertificateFixtures(in: sandbox.root)
        let tag = Data("com.example.release-signing".utf8)
        var error: Unmanaged<CFError>?
        let parameters: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256,
                                         kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
                                         kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: tag]]
        guard let key = SecKeyCreateRandomKey(parameters as CFDictionary, &error) else { throw error!.takeRetainedValue() as Error }
        let message = Data("release 1.0 of the app".utf8)
        let signature = try XCTUnwrap(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message as CFData, &error) as Data?)
        let publicPEM = try expect(0, ["key", "public", "--tag", "com.example.release-signing"]).stdout
        let directory = fixtures.path
        try Data(publicPEM).write(to: URL(fileURLWithPath: directory + "/signing.pub"))
        try message.write(to: URL(fileURLWithPath: directory + "/message"))
        try signature.write(to: URL(fileURLWithPath: directory + "/message.sig"))
        let verify = Spawn.run("/usr/bin/openssl", ["dgst", "-sha256", "-verify", directory + "/signing.pub", "-signature", directory + "/message.sig",
                                                    directory + "/message"], environment: ["PATH": "/usr/bin:/bin"], input: .devNull, timeout: 30)
        XCTAssertEqual(verify.status, 0, verify.summary)
        XCTAssertEqual(verify.out, "Verified OK\n")
    }

    func testECIESFromSwiftOpensWithLocketKeyDecrypt() throws {
        try expect(0, ["key", "generate", "--type", "p256", "--tag", "com.example.inbox", "--label", "inbox"])
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassKey, kSecAttrApplicationTag: Data("com.example.inbox".utf8), kSecReturnRef: true]
                                           as CFDictionary, &result), errSecSuccess)
        let privateKey = result as! SecKey
        let publicKey = try XCTUnwrap(SecKeyCopyPublicKey(privateKey))
        var error: Unmanaged<CFError>?
        let sealed = try XCTUnwrap(SecKeyCreateEncryptedData(publicKey, .eciesEncryptionCofactorVariableIVX963SHA256AESGCM,
                                                             Data("for the shell's eyes".utf8) as CFData, &error) as Data?)
        let opened = try expect(0, ["key", "decrypt", "--tag", "com.example.inbox", "--algorithm", "ecies-cofactor-variable-iv-x963-sha256-aesgcm"],
                                input: .bytes(Array(sealed)))
        XCTAssertEqual(opened.out, "for the shell's eyes")
    }

    /// User presence through the module: the keychain password is asked at
    /// the program's terminal, with kSecUseOperationPrompt above it; a wrong
    /// one gets nothing; without a terminal the read fails at once.
    func testUserPresenceIsAskedAtTheTerminal() throws {
        let host = try XCTUnwrap(SecurityTestHost.path, "SecurityTestHost was not built next to the tests")
        try expect(0, ["add", "-s", "registry", "-a", "ci", "--access-control", "when-unlocked:user-presence", "-w"],
                   input: .text("presence-secret\n"))
        var environment = sandbox.environment
        environment["PATH"] = "/usr/bin:/bin"
        let right = TerminalDriver.run(host, ["read", "registry", "ci", "deploy needs the registry token"], answers: [password],
                                       environment: environment, timeout: 30)
        XCTAssertEqual(right.status, 0, right.summary)
        XCTAssertTrue(right.out.contains("deploy needs the registry token"), right.out)
        XCTAssertTrue(right.out.contains("Keychain password for "), right.out)
        XCTAssertTrue(right.out.contains("presence-secret"), right.out)
        XCTAssertFalse(right.out.contains(password), "the password is not echoed")
        let wrong = TerminalDriver.run(host, ["read", "registry", "ci"], answers: ["not the password"], environment: environment, timeout: 30)
        XCTAssertEqual(wrong.status, 1, wrong.summary)
        XCTAssertTrue(wrong.out.contains("status \(errSecAuthFailed)"), wrong.out)
        let headless = Spawn.run("/usr/bin/setsid", ["-w", host, "read", "registry", "ci"], environment: environment, input: .devNull, timeout: 30)
        XCTAssertEqual(headless.out, "status \(errSecInteractionNotAllowed)\n", headless.summary)
    }
}

/// The program that calls the Security module in a process of its own, built next to the test bundle.
enum SecurityTestHost {
    static let path: String? = {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let exe = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let candidate = String(exe[..<exe.lastIndex(of: "/")!]) + "/SecurityTestHost"
        return access(candidate, X_OK) == 0 ? candidate : nil
    }()
}
