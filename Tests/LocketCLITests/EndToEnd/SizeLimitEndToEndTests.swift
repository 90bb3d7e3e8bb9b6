import Foundation
import LocketSupport
import XCTest
@testable import LocketCore

/// Issue 44 on the command line: a backup never fails a whole keychain for
/// one item stored before every path checked sizes (it is left out, named,
/// with a warning), and a search of as many free-form attributes as an item
/// may have works while one more is a limit of the query (errSecParam).
final class SizeLimitEndToEndTests: EndToEndCase {
    override class var inProcess: Bool { true }

    /// An item whose label is past the limit, as the Secret Service stored one before the engine refused it.
    private func addOversizedItem() throws -> [UInt8] {
        let keychain = try Keychain.open(at: sandbox.loginKeychain, environment: Environment(sandbox.environment))
        let label = [UInt8](repeating: UInt8(ascii: "l"), count: 70_000)
        return try keychain.engine.write {
            try keychain.engine.insert(.genericPassword, [.service: Array("big".utf8), .label: label], group: Keychain.defaultAccessGroup,
                                pclass: .whenUnlocked, data: SecureBytes(copying: Array("big secret".utf8)), extra: nil).persistentRef
        }
    }

    func testABackupLeavesOutAnItemItCantCarryAndSaysWhich() throws {
        initKeychain()
        add("-s", "kept", "-a", "a")
        let ref = Hex.encode(try addOversizedItem())
        add("-s", "kept too", "-a", "b")
        let backup = sandbox.root + "/keychain.backup"
        let run = expect(0, "export", "--format", "backup", "--passphrase-stdin", "-o", backup, input: .text("pass\n"))
        XCTAssertTrue(run.err.contains("warning: the item \(ref) was left out: a generic-password item can't be backed up: its label is too long"),
                      run.summary)
        XCTAssertTrue(run.err.contains("exported 2 items"), run.summary)
        initKeychain("fresh")
        expect(0, "-k", "fresh", "import", backup, "--passphrase-stdin", input: .text("pass\n"))
        XCTAssertEqual(expect(0, "-k", "fresh", "find", "-s", "kept too", "-w", "-n").out, "s3cret")
        expect(44, "-k", "fresh", "find", "-s", "big")
    }

    func testTheCommandLineRefusesWhatItAlwaysRefused() {
        initKeychain()
        let run = expect(42, "add", "-s", "svc", "-l", String(repeating: "l", count: Attribute.maximumValueLength + 1), "-w", input: .text("s\n"))
        XCTAssertTrue(run.err.contains("errSecDataTooLarge") || run.err.contains("longer than"), run.summary)
    }

    func testASearchOfTheMostFreeFormAttributesWorksAndOneMoreIsALimit() throws {
        initKeychain()
        let names = (0..<FreeForm.maximumCount).map { "a\($0)" }
        let keychain = try Keychain.open(at: sandbox.loginKeychain, environment: Environment(sandbox.environment))
        var new = NewItem(itemClass: .genericPassword)
        try new.set(.service, Array("many".utf8))
        new.freeForm = FreeForm(attributes: Dictionary(uniqueKeysWithValues: names.map { ($0, "v") }), uniqueByReference: true)
        try keychain.add(new, data: SecureBytes(copying: Array("many-secret".utf8)))
        keychain.releaseFile()
        let attributes = names.flatMap { ["--attr", "\($0)=v"] }
        var run = expect(0, ["find", "-s", "many", "-w", "-n"] + attributes)
        XCTAssertEqual(run.out, "many-secret", run.summary)
        run = expect(206, ["find", "-w"] + attributes + ["--attr", "one=more"])
        XCTAssertTrue(run.err.contains("a query names 1001 free-form attributes; the most is 1000 (errSecParam -50)"), run.summary)
        XCTAssertFalse(run.err.contains("errSecInvalidKeychain"), run.summary)
    }
}
