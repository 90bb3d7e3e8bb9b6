import Foundation
import LocketTestSupport
import XCTest

/// SPEC §4 as revised (issue 37): the protection class is an ordinary
/// attribute of a query and `update` may change it, each item sealed again
/// under the new class; synchronizable is Apple's attribute, stored and
/// matched as Apple does. The command line's options for them.
final class EndToEndAppleAttributesTests: EndToEndCase {
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    private func accounts(_ arguments: String...) throws -> [String?] {
        try expect(0, ["--json", "find", "--all"] + arguments).jsonArray().map { $0["account"] as? String }
    }

    func testFindAndDeleteTakeTheProtectionClassAsATerm() throws {
        add("-s", "svc", "-a", "a", "--accessible", "after-first-unlock", secret: "A")
        add("-s", "svc", "-a", "b", secret: "B")
        XCTAssertEqual(try accounts("--accessible", "after-first-unlock"), ["a"])
        XCTAssertEqual(try accounts("-s", "svc", "--accessible", "kSecAttrAccessibleWhenUnlocked"), ["b"])
        assertError(expect(44, "find", "-a", "a", "--accessible", "ak"), "errSecItemNotFound", -25300)
        ok("delete", "--accessible", "when-unlocked")
        XCTAssertEqual(try accounts(), ["a"])
        assertUsage(expect(2, "find", "--accessible"))
        assertError(expect(206, "find", "--accessible", "sometimes"), "errSecParam", -50)
    }

    func testUpdateMovesItemsToAnotherClassSealedUnderIt() throws {
        add("-s", "svc", "-a", "a", secret: "A")
        ok("update", "-s", "svc", "-a", "a", "--accessible", "after-first-unlock")
        let item = try expect(0, "--json", "find", "-a", "a").jsonObject()
        XCTAssertEqual(item["accessible"] as? String, "after-first-unlock")
        // Sealed under after-first-unlock's key: `lock` forgets when-unlocked's only.
        ok("lock")
        XCTAssertEqual(secret("-a", "a"), Array("A".utf8))
        // when-unlocked's key is not there: nothing changes.
        assertError(expect(36, "update", "-a", "a", "--set", "accessible=when-unlocked"), "errSecInteractionNotAllowed", -25308)
        XCTAssertEqual(secret("-a", "a", "--accessible", "after-first-unlock"), Array("A".utf8))
        unlock()
        assertUsage(expect(2, "update", "-a", "a", "--accessible", "ak", "--set", "accessible=ck"))
        ok("update", "-a", "a", "--accessible", "ak", "--set", "accessible=when-unlocked")
        ok("lock")
        assertError(expect(36, "find", "-a", "a", "-w"), "errSecInteractionNotAllowed", -25308)
        unlock()
        XCTAssertEqual(secret("-a", "a"), Array("A".utf8))
        // The class of a password-protected keychain's passcode items needs a password: this one has one.
        ok("update", "-a", "a", "--accessible", "when-passcode-set-this-device-only")
        XCTAssertEqual(try expect(0, "--json", "find", "-a", "a").jsonObject()["accessible"] as? String,
                       "when-passcode-set-this-device-only")
    }

    func testSynchronizableIsStoredAndMatchedAsApplesIs() throws {
        add("-s", "svc", "-a", "me", secret: "plain")
        add("-s", "svc", "-a", "me", "--synchronizable", secret: "synced")
        assertError(expect(45, "add", "-s", "svc", "-a", "me", "--synchronizable", "-w", input: .text("again\n")),
                    "errSecDuplicateItem", -25299)
        XCTAssertEqual(secret("-s", "svc", "-a", "me"), Array("plain".utf8), "without the option: only items that are not synchronizable")
        XCTAssertEqual(secret("-s", "svc", "-a", "me", "--synchronizable"), Array("synced".utf8))
        XCTAssertEqual(secret("-s", "svc", "-a", "me", "--synchronizable=yes"), Array("synced".utf8))
        XCTAssertEqual(secret("-s", "svc", "-a", "me", "--synchronizable=no"), Array("plain".utf8))
        let both = try expect(0, "--json", "find", "--all", "--synchronizable=any").jsonArray()
        XCTAssertEqual(both.map { $0["synchronizable"] as? Bool }, [nil, true])
        XCTAssertTrue(try expect(0, "find", "-a", "me", "--synchronizable").out.contains("synchronizable: yes"))
        assertUsage(expect(2, "find", "--synchronizable=sometimes"), mentions: ["--synchronizable"])
        // Made a twin of the other: errSecDuplicateItem, nothing changes.
        assertError(expect(45, "update", "-a", "me", "--set", "synchronizable=yes"), "errSecDuplicateItem", -25299)
        // delete without the option leaves the synchronizable one.
        ok("delete", "-s", "svc", "-a", "me")
        XCTAssertEqual(try accounts("--synchronizable=any"), ["me"])
        ok("update", "-a", "me", "--synchronizable", "--set", "synchronizable=no")
        XCTAssertEqual(secret("-a", "me"), Array("synced".utf8))
        // A query of --synchronizable=any alone narrows nothing a user named: delete wants --all.
        assertError(expect(206, "delete", "--synchronizable=any"), "errSecParam", -50)
        ok("delete", "--synchronizable=any", "--all")
        XCTAssertEqual(try expect(0, "--json", "dump").jsonArray().count, 0)
    }

    /// Whether an item leaves this device stays its class's: a synchronizable
    /// ThisDeviceOnly item is left out of a backup, as every such item is.
    func testSynchronizableDoesNotLetAThisDeviceOnlyItemLeave() throws {
        add("-s", "svc", "-a", "stays", "--synchronizable", "--accessible", "when-unlocked-this-device-only", secret: "device")
        add("-s", "svc", "-a", "leaves", "--synchronizable", secret: "portable")
        let backup = sandbox.root + "/backup.locket"
        let export = expect(0, "export", "--format", "backup", "--passphrase-stdin", "--out", backup,
                            input: .text("backup passphrase\n"))
        XCTAssertTrue(export.err.contains("1"), export.summary)
        initKeychain("restored")
        ok("-k", "restored", "import", "--passphrase-stdin", backup, input: .text("backup passphrase\n"))
        XCTAssertEqual(try expect(0, "-k", "restored", "--json", "find", "--all", "--synchronizable=any").jsonArray().map { $0["account"] as? String },
                       ["leaves"])
        XCTAssertEqual(try expect(0, "-k", "restored", "--json", "find", "--synchronizable").jsonObject()["synchronizable"] as? Bool, true)
    }
}
