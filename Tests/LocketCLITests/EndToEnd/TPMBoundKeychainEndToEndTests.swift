import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A keychain bound to its machine's TPM (SPEC §21, issue 39 point 2):
/// `init --tpm` and `settings --tpm` with LOCKET_TPM at a swtpm on loopback.
/// Engine and command-line logic run in-process (`CLI.run`, whose engine
/// starts the `locket-tpm` built beside the tests); the one thing only the
/// binary shows, that `find` in an unlocked session starts no helper, runs a
/// copy of the release `locket` with a stand-in `locket-tpm` beside it.
/// The class shares one swtpm; "another TPM" is a second one.
final class TPMBoundKeychainEndToEndTests: EndToEndCase {
    override class var inProcess: Bool { true }

    typealias PC = ProtectionClassName

    nonisolated(unsafe) private static var shared: Result<SoftwareTPM, Error>?
    nonisolated(unsafe) private static var second: Result<SoftwareTPM, Error>?
    private var elsewhere: Sandbox?

    override class func tearDown() {
        for tpm in [shared, second] { if case .success(let tpm)? = tpm { tpm.stop() } }
        shared = nil
        second = nil
        super.tearDown()
    }

    override func tearDown() {
        elsewhere?.remove()
        elsewhere = nil
        super.tearDown()
    }

    private func tpm(_ slot: inout Result<SoftwareTPM, Error>?) throws -> SoftwareTPM {
        if slot == nil { slot = Result { try SoftwareTPM() } }
        do { return try slot!.get() } catch let unavailable as TestUnavailable { throw XCTSkip(unavailable.reason) }
    }

    private func sharedTPM() throws -> SoftwareTPM { try tpm(&Self.shared) }
    private func secondTPM() throws -> SoftwareTPM { try tpm(&Self.second) }

    private var password: Input { .text(Self.password + "\n") }

    /// `locket ARGS` with LOCKET_TPM at `tpm` (in `other`'s sandbox when given).
    @discardableResult
    private func tpmLocket(_ tpm: SoftwareTPM, _ arguments: [String], input: Input = .devNull, in other: Sandbox? = nil,
                           file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        var environment = (other ?? sandbox).environment
        environment["LOCKET_TPM"] = tpm.tcti
        return locket(arguments, input: input, environment: environment, file: file, line: line)
    }

    @discardableResult
    private func succeeds(_ tpm: SoftwareTPM, _ arguments: [String], input: Input = .devNull,
                          file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let result = tpmLocket(tpm, arguments, input: input, file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        return result
    }

    private func read(_ tpm: SoftwareTPM, _ service: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        let found = tpmLocket(tpm, ["find", "-s", service, "-w"], file: file, line: line)
        XCTAssertEqual(found.status, 0, found.summary, file: file, line: line)
        return found.out
    }

    private func addEveryClass(_ tpm: SoftwareTPM) {
        for pc in PC.all {
            succeeds(tpm, ["add", "-s", pc.code, "-a", "acct", "--accessible", pc.name, "-w"], input: .text("secret-\(pc.code)\n"))
        }
    }

    private func assertEveryClassReadable(_ tpm: SoftwareTPM, _ when: String, file: StaticString = #filePath, line: UInt = #line) {
        for pc in PC.all {
            XCTAssertEqual(read(tpm, pc.code, file: file, line: line), "secret-\(pc.code)\n", "\(pc.name) \(when)", file: file, line: line)
        }
    }

    /// The keychain file's bytes and its journal's, if any, by name: to show nothing was written.
    private func fileBytes(_ path: String) -> [String: Data] {
        var files: [String: Data] = [:]
        for suffix in ["", "-wal", "-journal"] {
            if let data = FileManager.default.contents(atPath: path + suffix), !data.isEmpty { files[suffix] = data }
        }
        return files
    }

    private var deviceSecret: String { sandbox.stateHome + "/locket/device.key" }

    /// The keychain file and the device secret copied to another sandbox,
    /// as if to another machine (whose TPM is `other`).
    private func copyToAnotherMachine() throws -> Sandbox {
        elsewhere?.remove()
        let other = try Sandbox()
        elsewhere = other
        for directory in [other.dataHome + "/locket", other.stateHome + "/locket"] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        try FileManager.default.copyItem(atPath: sandbox.loginKeychain, toPath: other.loginKeychain)
        try FileManager.default.copyItem(atPath: deviceSecret, toPath: other.stateHome + "/locket/device.key")
        return other
    }

    /// Another TPM refuses the keychain by name (errSecDecode), whatever is
    /// asked, and nothing is written there.
    private func assertRefusedOnAnotherTPM(_ other: Sandbox, file: StaticString = #filePath, line: UInt = #line) throws {
        let tpm = try secondTPM()
        let before = fileBytes(other.loginKeychain)
        for (arguments, input) in [(["unlock", "--password-stdin"], password), (["find", "-s", "ak", "-w"], .devNull),
                                   (["find", "-s", "dku", "-w"], .devNull)] as [([String], Input)] {
            let refused = tpmLocket(tpm, arguments, input: input, in: other, file: file, line: line)
            assertError(refused, "errSecDecode", -26275, file: file, line: line)
            XCTAssertTrue(refused.err.contains("bound to another TPM, or to this one before it was cleared"), refused.summary, file: file, line: line)
        }
        XCTAssertTrue(fileBytes(other.loginKeychain) == before, "nothing written on the other machine", file: file, line: line)
    }

    // MARK: - Bound at init

    /// `init --tpm` makes a keychain that works as any other: items added,
    /// found, locked, unlocked (after lock and after lock --all, a reboot),
    /// its password changed; status says it is bound; its password can't be
    /// removed (the binding would then be all that guards it).
    func testABoundKeychainWorksAcrossLockAndUnlock() throws {
        let tpm = try sharedTPM()
        succeeds(tpm, ["init", "--tpm", "--password-stdin"], input: password)
        XCTAssertTrue(succeeds(tpm, ["status"]).out.contains("tpm-bound: yes"))
        let json = try succeeds(tpm, ["--json", "status"]).jsonObject()
        XCTAssertEqual(json["tpmBound"] as? Bool, true)
        addEveryClass(tpm)
        assertEveryClassReadable(tpm, "after init --tpm")
        succeeds(tpm, ["lock"])
        assertError(tpmLocket(tpm, ["find", "-s", "ak", "-w"]), "errSecInteractionNotAllowed", -25308)
        XCTAssertEqual(read(tpm, "dku"), "secret-dku\n", "always-this-device-only stays readable while locked")
        succeeds(tpm, ["lock", "--all"])
        XCTAssertEqual(read(tpm, "dk"), "secret-dk\n", "always after lock --all: the device key through the TPM")
        assertError(tpmLocket(tpm, ["unlock", "--password-stdin"], input: .text("not the password\n")), "errSecAuthFailed", -25293)
        succeeds(tpm, ["unlock", "--password-stdin"], input: password)
        assertEveryClassReadable(tpm, "after lock --all and unlock")
        succeeds(tpm, ["passwd"], input: .text("\(Self.password)\nnew password\n"))
        succeeds(tpm, ["lock", "--all"])
        succeeds(tpm, ["unlock", "--password-stdin"], input: .text("new password\n"))
        assertEveryClassReadable(tpm, "after passwd")
        let removal = tpmLocket(tpm, ["passwd", "--remove", "--yes"], input: .text("new password\n"))
        assertError(removal, "errSecParam", -50)
        XCTAssertTrue(removal.err.contains("bound to the TPM"), removal.summary)
    }

    /// The keychain file and the device secret copied to another machine
    /// (another sandbox, another swtpm) open nothing there, with the password
    /// or without: errSecDecode naming why, and nothing written.
    func testACopyOnAnotherTPMIsRefusedAndNothingIsWritten() throws {
        let tpm = try sharedTPM()
        succeeds(tpm, ["init", "--tpm", "--password-stdin"], input: password)
        addEveryClass(tpm)
        try assertRefusedOnAnotherTPM(try copyToAnotherMachine())
        assertEveryClassReadable(tpm, "on its own TPM")
    }

    // MARK: - Bound later

    /// `settings --tpm` binds an existing keychain in one transaction: every
    /// item stays readable (before and after lock --all), status says so, a
    /// copy on another TPM is refused; a second `settings --tpm` changes
    /// nothing. `settings --no-tpm` frees it: every item still readable, and
    /// a copy opens on the other machine again.
    func testSettingsTPMBindsAnExistingKeychainAndKeepsEveryItem() throws {
        let tpm = try sharedTPM()
        initKeychain()
        addEveryClass(tpm)
        XCTAssertTrue(succeeds(tpm, ["status"]).out.contains("tpm-bound: no"))
        succeeds(tpm, ["settings", "--tpm", "--password-stdin"], input: password)
        XCTAssertTrue(succeeds(tpm, ["status"]).out.contains("tpm-bound: yes"))
        assertEveryClassReadable(tpm, "right after settings --tpm")
        succeeds(tpm, ["lock", "--all"])
        succeeds(tpm, ["unlock", "--password-stdin"], input: password)
        assertEveryClassReadable(tpm, "after lock --all and unlock")
        let before = fileBytes(sandbox.loginKeychain)
        let again = succeeds(tpm, ["settings", "--tpm", "--password-stdin"], input: password)
        XCTAssertTrue(again.err.contains("already bound"), again.summary)
        XCTAssertTrue(fileBytes(sandbox.loginKeychain) == before, "bound once")
        try assertRefusedOnAnotherTPM(try copyToAnotherMachine())

        succeeds(tpm, ["settings", "--no-tpm", "--password-stdin"], input: password)
        XCTAssertTrue(succeeds(tpm, ["status"]).out.contains("tpm-bound: no"))
        assertEveryClassReadable(tpm, "right after settings --no-tpm")
        succeeds(tpm, ["lock", "--all"])
        succeeds(tpm, ["unlock", "--password-stdin"], input: password)
        assertEveryClassReadable(tpm, "unbound, after lock --all and unlock")
        XCTAssertTrue(succeeds(tpm, ["settings", "--no-tpm"]).err.contains("not bound"))
        let other = try copyToAnotherMachine()
        let opened = tpmLocket(try secondTPM(), ["find", "-s", "dk", "-w"], in: other)
        XCTAssertEqual(opened.status, 0, "freed, the copy opens with the device secret alone: \(opened.summary)")
        XCTAssertEqual(opened.out, "secret-dk\n")
    }

    /// A wrong password binds nothing and the keychain is as it was.
    func testSettingsTPMWithAWrongPasswordChangesNothing() throws {
        let tpm = try sharedTPM()
        initKeychain()
        succeeds(tpm, ["add", "-s", "svc", "-a", "acct", "-w"], input: .text("kept\n"))
        assertError(tpmLocket(tpm, ["settings", "--tpm", "--password-stdin"], input: .text("not the password\n")), "errSecAuthFailed", -25293)
        XCTAssertTrue(succeeds(tpm, ["status"]).out.contains("tpm-bound: no"))
        XCTAssertEqual(read(tpm, "svc"), "kept\n")
    }

    // MARK: - No TPM

    /// Without LOCKET_TPM and /dev/tpmrm0: `init --tpm` is errSecNotAvailable
    /// saying why, and makes nothing; `settings --tpm` likewise changes nothing.
    func testWithoutATPMInitAndSettingsAreRefusedAndSayWhy() throws {
        guard access("/dev/tpmrm0", F_OK) != 0 else { throw XCTSkip("this machine has /dev/tpmrm0: the refusal needs a machine without a TPM") }
        let refused = locket(["init", "--tpm", "--password-stdin"], input: password)
        assertError(refused, "errSecNotAvailable", -25291)
        XCTAssertEqual(refused.status, 53)
        XCTAssertTrue(refused.err.contains("no TPM was found: /dev/tpmrm0 does not exist and LOCKET_TPM is not set"), refused.summary)
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.loginKeychain), "no keychain made")
        initKeychain()
        let before = fileBytes(sandbox.loginKeychain)
        assertError(locket(["settings", "--tpm", "--password-stdin"], input: password), "errSecNotAvailable", -25291)
        XCTAssertTrue(fileBytes(sandbox.loginKeychain) == before, "nothing written")
        XCTAssertTrue(ok("status").out.contains("tpm-bound: no"))
    }

    // MARK: - No helper for find

    /// In an unlocked session `find -w` on a bound keychain starts no
    /// `locket-tpm`: a copy of the release `locket` with a stand-in helper
    /// beside it that leaves a mark if run finds the item, and no mark. After
    /// `lock --all` the same command does start it (the control: the mark
    /// shows a start).
    func testFindInAnUnlockedSessionStartsNoHelper() throws {
        let tpm = try sharedTPM()
        succeeds(tpm, ["init", "--tpm", "--password-stdin"], input: password)
        succeeds(tpm, ["add", "-s", "svc", "-a", "acct", "-w"], input: .text("found without the TPM\n"))
        succeeds(tpm, ["add", "-s", "always", "-a", "acct", "--accessible", "always-this-device-only", "-w"], input: .text("dku\n"))
        let directory = sandbox.root + "/bin"
        let mark = sandbox.root + "/helper-ran"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: binary, toPath: directory + "/locket")
        let helper = directory + "/locket-tpm"
        try "#!/bin/sh\necho ran >> '\(mark)'\nexit 1\n".write(toFile: helper, atomically: true, encoding: .utf8)
        XCTAssertEqual(chmod(helper, 0o755), 0)
        var environment = sandbox.environment
        environment["LOCKET_TPM"] = tpm.tcti
        func find(_ service: String) -> RunResult {
            Spawn.run(directory + "/locket", ["find", "-s", service, "-w"], environment: environment, input: .devNull, timeout: 30)
        }
        // Right after init, and after a reboot's lock --all and an unlock (which asks the TPM once).
        for unlocked in ["init", "unlock"] {
            if unlocked == "unlock" {
                succeeds(tpm, ["lock", "--all"])
                succeeds(tpm, ["unlock", "--password-stdin"], input: password)
            }
            for service in ["svc", "always"] {
                let found = find(service)
                XCTAssertEqual(found.status, 0, found.summary)
                XCTAssertFalse(FileManager.default.fileExists(atPath: mark), "after \(unlocked), find -s \(service) -w started locket-tpm: \(found.summary)")
            }
            XCTAssertEqual(find("svc").out, "found without the TPM\n")
        }
        succeeds(tpm, ["lock", "--all"])
        let locked = find("always")
        XCTAssertNotEqual(locked.status, 0, locked.summary)
        XCTAssertTrue(FileManager.default.fileExists(atPath: mark), "the stand-in helper leaves its mark when run: \(locked.summary)")
        // A helper whose libraries are missing (the loader's exit 127, as
        // without the package's recommended libtss2) is named in one line.
        try "#!/bin/sh\nexit 127\n".write(toFile: helper, atomically: true, encoding: .utf8)
        XCTAssertEqual(chmod(helper, 0o755), 0)
        let unloadable = Spawn.run(directory + "/locket", ["-k", sandbox.root + "/other.keychain", "init", "--tpm", "--password-stdin"],
                                   environment: environment, input: password, timeout: 30)
        assertError(unloadable, "errSecNotAvailable", -25291)
        XCTAssertEqual(unloadable.errLines.count, 1, unloadable.summary)
        XCTAssertTrue(unloadable.err.contains("a shared library it needs is missing, libtss2"), unloadable.summary)
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.root + "/other.keychain"), "nothing made")
    }
}
