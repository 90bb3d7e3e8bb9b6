@testable import LocketCLI
import XCTest

/// What the parser records for each option (a list searched by name since
/// the lookup's issue 12 work, not dictionaries), and the command table's
/// lookup that makes only the command named.
final class InvocationParsingTests: XCTestCase {
    private func invocation(_ arguments: [String]) throws -> Invocation {
        guard case .run(_, let invocation) = try Parser.parse(arguments) else {
            throw XCTSkip("not a command run")
        }
        return invocation
    }

    func testValuesSpellingsAndBareOptionsAreRecordedPerOption() throws {
        let run = try invocation(["find", "-s", "svc", "--account", "acct", "-w", "--limit=3"])
        XCTAssertEqual(run.value("service"), "svc")
        XCTAssertEqual(run.spelling("service"), "-s")
        XCTAssertEqual(run.value("account"), "acct")
        XCTAssertEqual(run.spelling("account"), "--account")
        XCTAssertEqual(run.value("limit"), "3")
        XCTAssertTrue(run.has("password"))
        XCTAssertEqual(run.all("password"), [""], "a flag has one empty value")
        XCTAssertFalse(run.has("label"))
        XCTAssertNil(run.value("label"))
        XCTAssertEqual(run.all("label"), [])
        XCTAssertNil(run.spelling("label"))
        XCTAssertFalse(run.isBare("password"), "find's -w is a flag, not an optional value")

        let add = try invocation(["add", "-s", "svc", "-w"])
        XCTAssertTrue(add.isBare("password"), "add's -w alone takes no value")
        let attached = try invocation(["add", "-s", "svc", "-wX"])
        XCTAssertFalse(attached.isBare("password"))
        XCTAssertEqual(attached.value("password"), "X")
    }

    func testARepeatableOptionKeepsEveryValueInOrderAndItsLastSpelling() throws {
        let run = try invocation(["exec", "--env", "A=s/a", "--env=B=s/b", "--env", "C=s/c", "--", "true"])
        XCTAssertEqual(run.all("env"), ["A=s/a", "B=s/b", "C=s/c"])
        XCTAssertEqual(run.value("env"), "C=s/c")
        XCTAssertEqual(run.spelling("env"), "--env")
        XCTAssertEqual(run.operands, ["true"])
    }

    func testAnOptionThatIsNotRepeatableIsRefusedTheSecondTime() {
        for arguments in [["find", "-s", "a", "-s", "b"], ["find", "-s", "a", "--service=b"], ["find", "-w", "-w"]] {
            XCTAssertThrowsError(try Parser.parse(arguments), "\(arguments)") { error in
                XCTAssertTrue((error as? UsageError)?.message.contains("given more than once") == true, "\(arguments): \(error)")
            }
        }
    }

    func testGlobalOptionsAnywhereStillApply() throws {
        guard case .run(let globals, let run) = try Parser.parse(["-k", "one", "find", "--json", "-s", "svc", "-e", "ent.json"]) else {
            return XCTFail("not a command run")
        }
        XCTAssertEqual(globals.keychain, "one")
        XCTAssertEqual(globals.entitlements, "ent.json")
        XCTAssertTrue(globals.json)
        XCTAssertEqual(run.value("service"), "svc")
        XCTAssertFalse(run.has("keychain"))
    }

    /// `command(named:)` makes one command from its builder: the builders'
    /// names are the commands' own, each once, in the table's order.
    func testEachBuilderMakesTheCommandItIsNamedFor() {
        XCTAssertEqual(CommandTable.builders.map(\.name), CommandTable.commands.map(\.name))
        XCTAssertEqual(Set(CommandTable.builders.map(\.name)).count, CommandTable.builders.count, "a command is listed twice")
        for command in CommandTable.commands {
            let made = CommandTable.command(named: command.name)
            XCTAssertEqual(made?.name, command.name)
            XCTAssertEqual(made?.options.map(\.long), command.options.map(\.long), command.name)
            XCTAssertEqual(made?.usage, command.usage, command.name)
        }
        XCTAssertNil(CommandTable.command(named: "no-such-command"))
    }
}
