import LocketCLI
import XCTest

/// Issue 30, point 5: an option of one meaning has one spelling in every
/// command that takes it (`export` refused `-l` while `find`, `add`,
/// `update` and `delete` took it; `inject` wrote `--out-file` where
/// `export` and `key` write `--out`). Checked over the whole command table,
/// so a new command or option can't drift.
final class OptionSpellingTests: XCTestCase {
    /// Short letters that deliberately mean something else in one command,
    /// each for the tool users know it from (the man page says so).
    static let borrowedLetters: [String: Set<Character>] = [
        // OpenSSH's ssh-agent: -a SOCKET, -s, -c, -D.
        "ssh-agent": ["a", "s", "c", "D"],
        // security(1)'s find-generic-password -g (show the data); the access group is long only there.
        "find": ["g"],
    ]
    /// Long options spelled apart on purpose: another meaning under the same
    /// name, or a letter the command lends to something else.
    static let spelledApart: Set<String> = [
        // The key type to generate (ed25519, p256, ...), not the four-character `type` attribute (-C).
        "key --type",
        // find's -g is --show-data (security(1)), so its access group is long only.
        "find --access-group",
        // -a is OpenSSH's letter in ssh-agent; the credential socket, run by units and not typed, has no short options.
        "credential-socket --socket",
    ]

    private var uses: [(command: String, option: OptionSpec)] {
        CommandTable.commands.flatMap { command in command.options.map { (command.name, $0) } }
            + CommandTable.globalOptions.map { ("(global)", $0) }
    }

    func testALongOptionHasOneShortLetterEverywhere() {
        var letters: [String: [Character?: [String]]] = [:]
        for (command, option) in uses where !Self.spelledApart.contains("\(command) --\(option.long)") {
            letters[option.long, default: [:]][option.short, default: []].append(command)
        }
        for (long, spellings) in letters where spellings.count > 1 {
            let described = spellings.map { "\($0.key.map { "-\($0)" } ?? "no short") in \($0.value.sorted().joined(separator: ", "))" }.sorted()
            XCTFail("--\(long) is spelled \(described.joined(separator: "; "))")
        }
    }

    func testAShortLetterMeansOneLongOptionEverywhere() {
        var meanings: [Character: [String: [String]]] = [:]
        for (command, option) in uses {
            guard let short = option.short, Self.borrowedLetters[command]?.contains(short) != true else { continue }
            meanings[short, default: [:]][option.long, default: []].append(command)
        }
        for (short, longs) in meanings where longs.count > 1 {
            let described = longs.map { "--\($0.key) in \($0.value.sorted().joined(separator: ", "))" }.sorted()
            XCTFail("-\(short) means \(described.joined(separator: "; "))")
        }
    }

    /// Options that say the same thing (their help texts are equal) are the same option.
    func testOneHelpTextOneSpelling() {
        var spellings: [String: Set<String>] = [:]
        for (_, option) in uses { spellings[option.help, default: []].insert(option.display) }
        for (help, displays) in spellings where displays.count > 1 {
            XCTFail("\"\(help)\" is spelled \(displays.sorted().joined(separator: " and "))")
        }
    }

    /// The spellings of the export issue, pinned: `export -l`, `-g` for the access group
    /// wherever a query or a new item takes it (but find), `--in`/`--out` for files.
    func testTheSpellingsOfIssue30() {
        func option(_ command: String, _ long: String) -> OptionSpec? { CommandTable.command(named: command)?.option(long: long) }
        for command in ["find", "add", "update", "delete", "export", "import", "key"] {
            XCTAssertEqual(option(command, "label")?.short, "l", command)
        }
        for command in ["add", "update", "delete", "otp", "export", "import", "key"] {
            XCTAssertEqual(option(command, "access-group")?.short, "g", command)
        }
        for command in ["inject", "export", "key"] {
            XCTAssertEqual(option(command, "out")?.short, "o", command)
            XCTAssertNil(option(command, "out-file"), command)
        }
        XCTAssertEqual(option("inject", "in")?.short, "i")
        XCTAssertEqual(option("key", "in")?.short, "i")
        XCTAssertNil(option("inject", "in-file"))
    }
}
