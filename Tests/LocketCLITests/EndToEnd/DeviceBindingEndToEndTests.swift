import Foundation
import XCTest

/// Issue 3, point 4: ThisDeviceOnly items are bound to the device secret. A
/// keychain file copied to "another machine" (a second sandbox: another
/// HOME, XDG dirs and device secret) opens there with its password; only its
/// migratable items are readable.
final class EndToEndDeviceBindingTests: EndToEndCase {
    /// Engine and command-line logic: in-process through `CLI.run` (issue 38);
    /// what needs the binary here (another process, a terminal, its own name) runs it.
    override class var inProcess: Bool { true }

    typealias PC = ProtectionClassName

    private var elsewhere: Sandbox!

    override func setUpWithError() throws {
        try super.setUpWithError()
        elsewhere = try Sandbox()
        // Unlocked on other devices and after losing the device secret, where
        // locket's floor on the Argon2id cost applies.
        initKeychain(kdf: .interactive)
        for pc in PC.all {
            let result = locket(["add", "-s", pc.code, "-a", "acct-" + pc.code, "--accessible", pc.code, "-w"],
                                input: .text("secret-\(pc.code)\n"))
            XCTAssertEqual(result.status, 0, result.summary)
        }
    }

    override func tearDown() {
        elsewhere?.remove()
        elsewhere = nil
        super.tearDown()
    }

    private var deviceSecret: String { sandbox.stateHome + "/locket/device.key" }

    /// Copies the keychain file alone (no WAL: every command has checkpointed on close), as `scp` would.
    private func copyKeychain(to other: Sandbox) throws {
        try FileManager.default.createDirectory(atPath: other.dataHome + "/locket", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: sandbox.loginKeychain, toPath: other.loginKeychain)
    }

    private func read(_ code: String, in other: Sandbox? = nil, file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let args = ["find", "-s", code, "-w"]
        if let other { return locket(args, environment: other.environment, file: file, line: line) }
        return locket(args, file: file, line: line)
    }

    /// Asserts a ThisDeviceOnly item never comes back with its data here, in any form.
    private func assertBoundElsewhere(_ code: String, in other: Sandbox?, file: StaticString = #filePath, line: UInt = #line) {
        let env = other?.environment ?? [:]
        for args in [["find", "-s", code, "-w"], ["find", "-s", code], ["find", "-s", code, "-g"], ["--json", "find", "-s", code, "-w"],
                     ["find", "-a", "acct-" + code]] {
            let result = locket(args, environment: env, file: file, line: line)
            XCTAssertEqual(result.status, 36, "\(PC.name(code)) elsewhere: \(args.joined(separator: " ")): \(result.summary)", file: file, line: line)
            XCTAssertEqual(result.stdout, [], file: file, line: line)
            XCTAssertTrue(result.err.contains("another device"), "the message says why: \(result.summary)", file: file, line: line)
        }
        let update = locket(["update", "-s", code, "--set", "comment=x"], environment: env, file: file, line: line)
        XCTAssertEqual(update.status, 36, update.summary, file: file, line: line)
    }

    /// dump text and JSON list every item; ThisDeviceOnly ones as unavailable-on-this-device with no attributes or data.
    private func assertDumpMarksBoundItems(in other: Sandbox?, file: StaticString = #filePath, line: UInt = #line) throws {
        let env = other?.environment ?? [:]
        for dataArgs in [[String](), ["--data"]] {
            let json = locket(["--json", "dump"] + dataArgs, environment: env, file: file, line: line)
            XCTAssertEqual(json.status, 0, json.summary, file: file, line: line)
            let items = try json.jsonArray(file: file, line: line)
            XCTAssertEqual(items.count, PC.all.count, json.out, file: file, line: line)
            for item in items {
                let accessible = item["accessible"] as? String ?? ""
                let code = PC.all.first { $0.name == accessible }?.code ?? "?"
                if PC.thisDeviceOnly.contains(code) {
                    XCTAssertEqual(item["status"] as? String, "unavailable-on-this-device", "\(item)", file: file, line: line)
                    XCTAssertNil(item["service"], "\(item)", file: file, line: line)
                    XCTAssertNil(item["data"], "\(item)", file: file, line: line)
                    XCTAssertNotNil(item["persistentRef"], "\(item)", file: file, line: line)
                } else {
                    XCTAssertEqual(item["status"] as? String, "available", "\(item)", file: file, line: line)
                    XCTAssertEqual(item["service"] as? String, code, file: file, line: line)
                    if !dataArgs.isEmpty { XCTAssertEqual(item["data"] as? String, "secret-" + code, file: file, line: line) }
                }
            }
            let text = locket(["dump"] + dataArgs, environment: env, file: file, line: line)
            XCTAssertEqual(text.status, 0, text.summary, file: file, line: line)
            let records = text.out.components(separatedBy: "\n\n")
            XCTAssertEqual(records.count, PC.all.count, text.out, file: file, line: line)
            for record in records {
                let bound = PC.thisDeviceOnly.contains { record.contains("accessible: \(PC.name($0))\n") }
                XCTAssertEqual(record.contains("status: unavailable-on-this-device\n"), bound, record, file: file, line: line)
            }
            for code in PC.thisDeviceOnly {
                XCTAssertFalse(json.out.contains("secret-" + code) || text.out.contains("secret-" + code),
                               "a ThisDeviceOnly secret was printed elsewhere", file: file, line: line)
            }
        }
    }

    // MARK: - A copy on another machine

    func testACopyElsewhereReadsMigratableItemsOnly() throws {
        try copyKeychain(to: elsewhere)
        XCTAssertFalse(FileManager.default.fileExists(atPath: elsewhere.stateHome + "/locket/device.key"))

        // Before unlock there: locked (36) for every class, never missing (44).
        for pc in PC.all {
            let result = read(pc.code, in: elsewhere)
            XCTAssertEqual(result.status, 36, "\(pc.name) on the copy before unlock: \(result.summary)")
        }
        let status = statusJSON(in: elsewhere)
        XCTAssertEqual(status["whenUnlocked"] as? String, "locked")
        XCTAssertEqual(status["afterFirstUnlock"] as? String, "locked")
        XCTAssertEqual(itemCounts(in: elsewhere), Dictionary(uniqueKeysWithValues: PC.all.map { ($0.name, 1) }))

        // A wrong password fails there as here.
        XCTAssertEqual(locket(in: elsewhere, "unlock", "--password-stdin", input: .text("wrong\n")).status, 51)
        unlock(in: elsewhere)
        XCTAssertTrue(FileManager.default.fileExists(atPath: elsewhere.stateHome + "/locket/device.key"),
                      "unlock makes the device secret the other machine lacked")
        for code in PC.migratable {
            let result = read(code, in: elsewhere)
            XCTAssertEqual(result.status, 0, "\(PC.name(code)) migrates: \(result.summary)")
            XCTAssertEqual(result.out, "secret-\(code)\n")
        }
        for code in PC.thisDeviceOnly { assertBoundElsewhere(code, in: elsewhere) }
        try assertDumpMarksBoundItems(in: elsewhere)
        // A search that spans them never returns a partial answer.
        XCTAssertEqual(locket(in: elsewhere, "find", "--all", "-w").status, 36)

        // always migrates as always: once unlocked there, it reads after lock --all with no password.
        XCTAssertEqual(locket(in: elsewhere, "lock", "--all").status, 0)
        XCTAssertEqual(read("dk", in: elsewhere).out, "secret-dk\n")
        XCTAssertEqual(read("ck", in: elsewhere).status, 36)
        XCTAssertEqual(read("dku", in: elsewhere).status, 36)

        // Deleting a bound item elsewhere works (and only there).
        unlock(in: elsewhere)
        XCTAssertEqual(locket(in: elsewhere, "delete", "-s", "aku").status, 0)
        XCTAssertEqual(itemCounts(in: elsewhere)["when-unlocked-this-device-only"], 0)

        // The original is untouched by all this.
        for pc in PC.all { XCTAssertEqual(read(pc.code).out, "secret-\(pc.code)\n", pc.name) }
        ok("lock", "--all")
        unlock()
        for pc in PC.all { XCTAssertEqual(read(pc.code).out, "secret-\(pc.code)\n", pc.name) }
    }

    func testACopyWithAnotherDeviceSecretFileViaLOCKET_DEVICE_KEY() throws {
        // Same machine layout, but LOCKET_DEVICE_KEY names a different, existing secret.
        let otherSecret = sandbox.root + "/other-device.key"
        var random = [UInt8](repeating: 0, count: 32)
        for i in random.indices { random[i] = UInt8.random(in: 0...255) }
        XCTAssertTrue(FileManager.default.createFile(atPath: otherSecret, contents: Data(random), attributes: [.posixPermissions: 0o600]))
        let copy = sandbox.root + "/copy.keychain"
        try FileManager.default.copyItem(atPath: sandbox.loginKeychain, toPath: copy)
        // Its own runtime directory too: sessions are per machine (and keyed by the keychain's identity, which the copy shares).
        let otherRuntime = sandbox.root + "/other-run"
        XCTAssertEqual(mkdir(otherRuntime, 0o700), 0)
        let env = ["LOCKET_DEVICE_KEY": otherSecret, "XDG_RUNTIME_DIR": otherRuntime]
        expect(36, "-k", copy, "find", "-s", "dk", "-w", environment: env)
        expect(0, "-k", copy, "unlock", "--password-stdin", input: .text(Self.password + "\n"), environment: env)
        for code in PC.migratable {
            XCTAssertEqual(expect(0, "-k", copy, "find", "-s", code, "-w", environment: env).out, "secret-\(code)\n")
        }
        for code in PC.thisDeviceOnly {
            let result = expect(36, "-k", copy, "find", "-s", code, "-w", environment: env)
            XCTAssertTrue(result.err.contains("another device"), result.summary)
        }
        let dump = try expect(0, "-k", copy, "--json", "dump", environment: env).jsonArray()
        XCTAssertEqual(dump.filter { $0["status"] as? String == "unavailable-on-this-device" }.count, PC.thisDeviceOnly.count)
        // The secret file given was used, not replaced.
        XCTAssertEqual(FileManager.default.contents(atPath: otherSecret), Data(random))
        // The copy was re-keyed for the other device on its first unlock there
        // (so that new device-bound items work there): back on this machine its
        // old device-bound items stay unavailable, never damaged, while the
        // original keychain file still reads everything.
        ok("lock", "--all")
        expect(0, "-k", copy, "unlock", "--password-stdin", input: .text(Self.password + "\n"))
        for code in PC.migratable { XCTAssertEqual(expect(0, "-k", copy, "find", "-s", code, "-w").out, "secret-\(code)\n") }
        let back = try expect(0, "-k", copy, "--json", "dump").jsonArray()
        XCTAssertEqual(back.filter { $0["status"] as? String == "unavailable-on-this-device" }.count, PC.thisDeviceOnly.count)
        XCTAssertFalse(back.contains { $0["status"] as? String == "damaged" })
        expect(0, "unlock", "--password-stdin", input: .text(Self.password + "\n"))
        for pc in PC.all { XCTAssertEqual(expect(0, "find", "-s", pc.code, "-w").out, "secret-\(pc.code)\n") }
    }

    func testNewThisDeviceOnlyItemsCanBeAddedOnTheNewMachine() throws {
        // The copy's old ThisDeviceOnly items are lost there, but the classes themselves
        // must stay usable on the new machine, as on a phone restored from a backup.
        try copyKeychain(to: elsewhere)
        unlock(in: elsewhere)
        for code in PC.thisDeviceOnly {
            let add = locket(in: elsewhere, "add", "-s", "new-" + code, "--accessible", code, "-w", input: .text("new-\(code)\n"))
            XCTAssertEqual(add.status, 0, "adding a \(PC.name(code)) item on the new machine: \(add.summary)")
            guard add.status == 0 else { continue }
            XCTAssertEqual(locket(in: elsewhere, "find", "-s", "new-" + code, "-w").out, "new-\(code)\n")
        }
    }

    // MARK: - A lost device secret

    func testLosingTheDeviceSecretKeepsMigratableItems() throws {
        ok("lock", "--all")
        XCTAssertEqual(unlink(deviceSecret), 0)
        // Nothing to open the always keys or the index with: locked, never missing.
        for pc in PC.all { XCTAssertEqual(read(pc.code).status, 36, pc.name) }
        unlock()
        XCTAssertEqual(mode(deviceSecret), 0o600, "unlock makes a new device secret")
        for code in PC.migratable { XCTAssertEqual(read(code).out, "secret-\(code)\n", PC.name(code)) }
        for code in PC.thisDeviceOnly { assertBoundElsewhere(code, in: nil) }
        try assertDumpMarksBoundItems(in: nil)
        // always is re-bound to the new secret: readable again with no password.
        ok("lock", "--all")
        XCTAssertEqual(read("dk").out, "secret-dk\n")
        // Nothing was deleted.
        XCTAssertEqual(itemCounts(), Dictionary(uniqueKeysWithValues: PC.all.map { ($0.name, 1) }))
    }

    func testLosingTheDeviceSecretWhileUnlockedLosesNothingMigratable() throws {
        XCTAssertEqual(unlink(deviceSecret), 0)
        // The session still holds the keys.
        for code in PC.migratable { XCTAssertEqual(read(code).out, "secret-\(code)\n") }
        ok("lock", "--all")
        unlock()
        for code in PC.migratable { XCTAssertEqual(read(code).out, "secret-\(code)\n") }
        XCTAssertEqual(read("cku").status, 36)
    }

    // MARK: - A device secret someone else could have written

    /// The device secret is read only when it is this user's own private regular
    /// file: a copy others can write, another user's file, or a FIFO put in its
    /// place is refused with one errSecIO line (the FIFO without waiting for a writer).
    func testADeviceSecretOthersControlIsRefused() throws {
        ok("lock", "--all")
        XCTAssertEqual(read("dk").out, "secret-dk\n", "the always class opens with the device key alone")
        func refused(_ problem: String, file: StaticString = #filePath, line: UInt = #line) {
            let result = read("dk")
            XCTAssertEqual(result.status, 220, "errSecIO expected: \(result.summary)", file: file, line: line)
            assertError(result, "errSecIO", -36, file: file, line: line)
            XCTAssertTrue(result.err.contains(deviceSecret) && result.err.contains(problem), result.err, file: file, line: line)
            XCTAssertEqual(result.out, "", file: file, line: line)
        }
        XCTAssertEqual(chmod(deviceSecret, 0o644), 0)
        refused("open to other users")
        XCTAssertEqual(chmod(deviceSecret, 0o600), 0)
        if geteuid() == 0 {
            XCTAssertEqual(chown(deviceSecret, 65534, 65534), 0)
            refused("belongs to another user (uid 65534)")
            XCTAssertEqual(chown(deviceSecret, 0, 0), 0)
        }
        let saved = deviceSecret + ".saved"
        XCTAssertEqual(rename(deviceSecret, saved), 0)
        XCTAssertEqual(mkfifo(deviceSecret, 0o600), 0)
        refused("not a regular file")
        XCTAssertEqual(unlink(deviceSecret), 0)
        XCTAssertEqual(rename(saved, deviceSecret), 0)
        XCTAssertEqual(read("dk").out, "secret-dk\n", "nothing was changed by the refusals")
    }
}
