import Glibc
import LocketCLI
import LocketCLIBackends
import LocketSystem
import Synchronization
import XCTest

/// The command table is the one list of commands and options (STYLE habit 4).
/// These tests fail when the man page, `locket help`, the shell completions in
/// `completions/` or the README drift from it. They use only public API, so
/// they run against a release build too.
final class DriftTests: XCTestCase {
    // MARK: - Completions

    /// completions/FILE is exactly what `locket completion SHELL` prints.
    func testCompletionFilesAreTheGeneratedScripts() throws {
        for shell in Completions.Shell.allCases {
            let path = "completions/\(shell.fileName)"
            let file = try Repo.read(path)
            let generated = Completions.script(for: shell)
            XCTAssert(file == generated,
                      "\(path) differs from the command table; regenerate with "
                          + "`locket completion \(shell.rawValue) > completions/\(shell.fileName)`"
                          + (firstDifference(file, generated).map { " (first difference at line \($0))" } ?? ""))
        }
    }

    /// Each script offers every command and every spelling of every option.
    func testCompletionScriptsMentionEveryCommandAndOption() {
        for shell in Completions.Shell.allCases {
            let script = Completions.script(for: shell)
            for command in CommandTable.commands {
                let offered: String
                switch shell {
                case .bash: offered = " \(command.name)"
                case .zsh: offered = "'\(command.name):"
                case .fish: offered = "-a \(command.name) "
                }
                XCTAssert(script.contains(offered), "the \(shell) completion does not offer the command \(command.name)")
            }
            for option in Table.allOptions {
                // How each shell spells an offered option; zsh marks a repeatable one with `*`.
                let spellings: (String) -> [String]
                switch shell {
                case .bash: spellings = { [" \($0) ", "\"\($0) ", " \($0)\"", " \($0))", "|\($0))"] }
                case .zsh: spellings = { ["'\($0)[", "'*\($0)["] }
                case .fish: spellings = { ["-l \($0.dropFirst(2)) ", "-s \($0.dropFirst()) "] }
                }
                var flags = ["--\(option.long)"]
                if let short = option.short { flags.append("-\(short)") }
                for flag in flags where !spellings(flag).contains(where: script.contains) {
                    XCTFail("the \(shell) completion does not offer \(flag) (\(option.spelling))")
                }
            }
        }
    }

    /// The scripts parse: `bash -n`, and `zsh -n` / `fish -n` where those shells are installed.
    func testCompletionScriptsParse() throws {
        let directory = try Scratch.directory()
        defer { _ = Scratch.sh("rm -rf '\(directory)'") }
        for (shell, check) in [(Completions.Shell.bash, "bash -n"), (.zsh, "zsh -n"), (.fish, "fish -n")] {
            guard Scratch.sh("command -v \(check.split(separator: " ")[0]) >/dev/null 2>&1") == 0 else { continue }
            let path = directory + "/" + shell.fileName
            try Scratch.write(path, Completions.script(for: shell))
            XCTAssertEqual(Scratch.sh("\(check) '\(path)' 2>/dev/null"), 0, "`\(check)` rejects the \(shell) completion")
        }
    }

    /// In bash, `locket f<TAB>` offers find, and option values complete.
    func testBashCompletionCompletes() throws {
        let directory = try Scratch.directory()
        defer { _ = Scratch.sh("rm -rf '\(directory)'") }
        try Scratch.write(directory + "/locket.bash", Completions.script(for: .bash))
        func complete(_ words: [String]) throws -> [String] {
            let quoted = words.map { "'\($0)'" }.joined(separator: " ")
            try Scratch.write(directory + "/drive.bash", """
                source '\(directory)/locket.bash'
                COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); COMPREPLY=()
                _locket
                printf '%s\\n' "${COMPREPLY[@]}" > '\(directory)/out'

                """)
            guard Scratch.sh("HOME='\(directory)' bash '\(directory)/drive.bash' 2>/dev/null") == 0 else { return ["(bash failed)"] }
            return try Repo.read(directory + "/out", absolute: true).split(separator: "\n").map(String.init)
        }
        XCTAssertEqual(try complete(["locket", "f"]), ["find"])
        XCTAssertEqual(try complete(["locket", "-k", "work", "fi"]), ["find"])
        XCTAssertEqual(try complete(["locket", "find", "--show"]), ["--show-data", "--show-ref"])
        XCTAssertEqual(try complete(["locket", "add", "--class", ""]), ["genp", "inet", "keys", "cert", "identity"])
        XCTAssertEqual(try complete(["locket", "help", "un"]), ["unlock"])
    }

    // MARK: - Man page

    /// SYNOPSIS and COMMANDS name every command with its usage line, exactly as help prints it.
    func testManPageHasEveryCommandAndUsageLine() throws {
        let man = try ManPage()
        // Each section once: cutting them out again for every command took seconds in the test build.
        let synopsis = man.section("SYNOPSIS"), commands = man.section("COMMANDS")
        for command in CommandTable.commands {
            let usage = command.usageLine
            XCTAssert(synopsis.contains(usage), "man page SYNOPSIS lacks `\(usage)`")
            XCTAssert(commands.contains(usage), "man page COMMANDS lacks `\(usage)`")
        }
        // One version (SPEC §10): the .TH line's is the one --version prints, which make deb gives the package.
        let title = man.lines.first { $0.hasPrefix(".TH LOCKET 1 ") }
        XCTAssert(title?.hasSuffix(" \"locket \(CommandTable.version)\" \"User Commands\"") == true,
                  "the man page's .TH line should say \"locket \(CommandTable.version)\": \(title ?? "no .TH line")")
    }

    /// OPTIONS lists every option as help shows it (`-a, --account ACCOUNT`).
    func testManPageListsEveryOption() throws {
        let options = try ManPage().section("OPTIONS")
        for option in Table.allOptions {
            XCTAssert(options.contains(option.display), "man page OPTIONS lacks `\(option.display)`")
            XCTAssert(options.contains("--\(option.long)"), "man page OPTIONS lacks --\(option.long)")
            if let short = option.short {
                XCTAssert(options.contains("-\(short)"), "man page OPTIONS lacks -\(short)")
            }
        }
    }

    /// Nothing the man page documents as an option is missing from the table:
    /// every `--long` anywhere in the page exists, and every `.TP` entry of
    /// OPTIONS is spelled exactly as the table's display of that option.
    func testManPageDocumentsNoOptionOutsideTheTable() throws {
        let man = try ManPage()
        let known = Set(Table.allOptions.map(\.long))
        for long in Table.longOptions(in: man.text) where !known.contains(long) {
            XCTFail("the man page mentions --\(long), which is not in the command table")
        }
        let displays = Set(Table.allOptions.map(\.display))
        let entries = man.tagsOfOptionsSection()
        XCTAssertGreaterThan(entries.count, CommandTable.globalOptions.count, "no .TP entries found in OPTIONS")
        for entry in entries where !displays.contains(entry) {
            XCTFail("man page OPTIONS entry `\(entry)` matches no option of the command table (stale spelling or value name?)")
        }
    }

    /// groff renders the page without a warning (a word it can't break, a
    /// line it can't adjust, an unknown request), at its default width and
    /// at the terminal widths man(1) commonly uses.
    func testManPageRendersWithoutGroffWarnings() throws {
        guard Scratch.sh("command -v groff >/dev/null 2>&1") == 0 else {
            throw XCTSkip("groff is not installed (Debian package groff-base; make test-deps installs it)")
        }
        let directory = try Scratch.directory()
        defer { _ = Scratch.sh("rm -rf '\(directory)'") }
        for width in ["", "-rLL=80n", "-rLL=100n", "-rLL=120n"] {
            let status = Scratch.sh("groff -man -Tutf8 -ww -z \(width) '\(Repo.root)/man/locket.1' 2>'\(directory)/warnings'")
            let warnings = try Repo.read(directory + "/warnings", absolute: true)
            XCTAssertEqual(status, 0, "groff failed \(width)")
            XCTAssert(warnings.isEmpty, "groff -man -Tutf8 -ww -z \(width) man/locket.1:\n\(warnings)")
        }
    }

    // MARK: - Help

    /// `locket help CMD` lists every option of CMD and the global ones, and
    /// names no option the table lacks; `locket CMD --help` prints the same.
    func testHelpListsExactlyTheTable() {
        let known = Set(Table.allOptions.map(\.long))
        for command in CommandTable.commands {
            let (status, help) = Run.cli(["locket", "help", command.name])
            XCTAssertEqual(status, 0, "locket help \(command.name)")
            XCTAssert(help.contains("usage: \(command.usageLine)\n"), "help \(command.name) lacks its usage line")
            for option in command.options + CommandTable.globalOptions {
                XCTAssert(help.contains(option.display), "help \(command.name) lacks `\(option.display)`")
            }
            for long in Table.longOptions(in: help) where !known.contains(long) {
                XCTFail("help \(command.name) mentions --\(long), which is not in the command table")
            }
            // `locket help --help` is the overview, like `locket --help`.
            if command.name != "help" {
                let (dashStatus, dashHelp) = Run.cli(["locket", command.name, "--help"])
                XCTAssertEqual(dashStatus, 0, "locket \(command.name) --help")
                XCTAssertEqual(dashHelp, help, "locket \(command.name) --help differs from locket help \(command.name)")
            }
        }
        let (status, overview) = Run.cli(["locket", "help"])
        XCTAssertEqual(status, 0)
        for command in CommandTable.commands {
            XCTAssert(overview.contains("  \(command.name) "), "locket help does not list \(command.name)")
        }
        for option in CommandTable.globalOptions + [CommandTable.versionOption] {
            XCTAssert(overview.contains(option.display), "locket help lacks `\(option.display)`")
        }
        for long in Table.longOptions(in: overview) where !known.contains(long) {
            XCTFail("locket help mentions --\(long), which is not in the command table")
        }
    }

    // MARK: - README

    /// The README's set-up is `make install` then `make test`, and points to the man page.
    func testReadmeGivesTheSetUpCommands() throws {
        let readme = try Repo.read("README.md")
        let install = readme.firstRange(of: "\nmake install\n")
        let test = readme.firstRange(of: "\nmake test\n")
        XCTAssertNotNil(install, "README.md must show `make install` on a line of its own")
        XCTAssertNotNil(test, "README.md must show `make test` on a line of its own")
        if let install, let test {
            XCTAssertLessThan(install.lowerBound, test.lowerBound, "README.md: `make install` comes before `make test`")
        }
        XCTAssert(readme.contains("man locket"), "README.md should point to `man locket`")
    }

    // MARK: - Helpers

    private func firstDifference(_ a: String, _ b: String) -> Int? {
        let x = a.split(separator: "\n", omittingEmptySubsequences: false)
        let y = b.split(separator: "\n", omittingEmptySubsequences: false)
        for i in 0..<max(x.count, y.count) where i >= x.count || i >= y.count || x[i] != y[i] { return i + 1 }
        return nil
    }
}

/// The command table, flattened.
private enum Table {
    /// Every option: global ones, `--version`, and each command's.
    static var allOptions: [OptionSpec] {
        CommandTable.globalOptions + [CommandTable.versionOption] + CommandTable.commands.flatMap(\.options)
    }

    /// The NAMEs of every `--NAME` in `text`.
    static func longOptions(in text: String) -> Set<String> {
        Set(text.matches(of: /--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)/).map { String($0.output.1) })
    }
}

/// Files of the repository, found from this source file's path.
private enum Repo {
    /// Tests/LocketCLITests/DriftTests.swift -> the repository root.
    static let root: String = {
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }()

    static func read(_ name: String, absolute: Bool = false) throws -> String {
        let path = absolute ? name : root + "/" + name
        let file = try pointerOrErrno("fopen") { fopen(path, "rb") }.get { Failure("cannot open \(path): \($0)") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

/// A private temporary directory and `/bin/sh`, for running the shells.
private enum Scratch {
    static func directory() throws -> String {
        var template = Array("/tmp/locket-drift-XXXXXX".utf8CString)
        let made = try pointerOrErrno("mkdtemp") { mkdtemp(&template) }.get { Repo.Failure("mkdtemp: \($0)") }
        return String(cString: made)
    }

    static func write(_ path: String, _ text: String) throws {
        guard let file = fopen(path, "wb") else { throw Repo.Failure("cannot write \(path)") }
        defer { fclose(file) }
        let bytes = Array(text.utf8)
        guard fwrite(bytes, 1, bytes.count, file) == bytes.count else { throw Repo.Failure("cannot write \(path)") }
    }

    /// The wait status of `sh -c command`: 0 when it exited 0.
    static func sh(_ command: String) -> Int32 { system(command) }
}

/// man/locket.1, as source lines and as plain text (fonts and escapes removed).
private struct ManPage {
    let lines: [String]

    init() throws {
        lines = try Repo.read("man/locket.1").split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// The whole page as plain text, one line per source line, comments dropped.
    var text: String { ManPage.plain(lines).joined(separator: "\n") }

    /// The plain text of `.SH NAME` up to the next `.SH`.
    func section(_ name: String) -> String {
        ManPage.plain(sourceLines(of: name)).joined(separator: "\n")
    }

    /// The tag line of every `.TP` entry in OPTIONS, as plain text.
    func tagsOfOptionsSection() -> [String] {
        let source = sourceLines(of: "OPTIONS")
        var tags: [String] = []
        for (i, line) in source.enumerated() where line == ".TP" && i + 1 < source.count {
            tags.append(ManPage.plain([source[i + 1]]).joined())
        }
        return tags
    }

    private func sourceLines(of name: String) -> [String] {
        guard let start = lines.firstIndex(where: { ManPage.heading($0) == name }) else { return [] }
        let rest = lines[(start + 1)...]
        let end = rest.firstIndex { $0.hasPrefix(".SH") } ?? lines.endIndex
        return Array(lines[(start + 1)..<end])
    }

    private static func heading(_ line: String) -> String? {
        guard line.hasPrefix(".SH ") else { return nil }
        return line.dropFirst(4).filter { $0 != "\"" }
    }

    /// Roff source lines as the reader sees their words: requests such as
    /// `.B x` keep their arguments, fonts and escapes are removed.
    static func plain(_ source: [String]) -> [String] {
        source.compactMap { line -> String? in
            if line.hasPrefix(".\\\"") || line.hasPrefix("'\\\"") { return nil }
            var s = line
            if s.hasPrefix(".") {
                // `.BR a ", " b` -> `a, b`: drop the macro, join its (quoted) arguments.
                let parts = s.split(separator: " ", maxSplits: 1)
                let macro = parts[0]
                s = parts.count > 1 ? String(parts[1]) : ""
                if ["B", "I", "R", "SM", "TH"].contains(macro.dropFirst()) {
                    s = words(s).joined(separator: " ")
                } else if ["BR", "RB", "BI", "IB", "IR", "RI"].contains(macro.dropFirst()) {
                    s = words(s).joined()
                } else if !["SH", "SS", "TP", "IP", "TQ"].contains(macro.dropFirst()) {
                    s = ""
                }
            }
            return unescape(s)
        }
    }

    /// The arguments of a macro line: space-separated, `"quoted with spaces"`.
    private static func words(_ s: String) -> [String] {
        var out: [String] = []
        var current = ""
        var quoted = false
        var any = false
        for c in s {
            if c == "\"" { quoted.toggle(); any = true; continue }
            if c == " " && !quoted {
                if any { out.append(current) }
                current = ""; any = false
                continue
            }
            current.append(c); any = true
        }
        if any { out.append(current) }
        return out
    }

    private static let escapes: [(String, String)] = [
        ("\\-", "-"), ("\\e", "\\"), ("\\(aq", "'"), ("\\(dq", "\""), ("\\(lq", "\""), ("\\(rq", "\""),
        ("\\(em", "-"), ("\\(en", "-"), ("\\&", ""), ("\\%", ""), ("\\:", ""), ("\\ ", " "), ("\\~", " "), ("\\|", ""), ("\\^", ""),
    ]

    /// A font change (`\fB`, `\f(CW`, `\f[CR]`), compiled once: a regex
    /// literal is parsed again on every use, and the page's lines made that
    /// most of a test's second (issue 38).
    nonisolated(unsafe) private static let fontChange = /\\f(\[[A-Za-z]*\]|\([A-Za-z]{2}|[A-Za-z0-9])/

    private static func unescape(_ line: String) -> String {
        // Every escape starts with a backslash.
        guard line.contains("\\") else { return line }
        var s = line.replacing(fontChange, with: "")
        // `\e` must become a backslash only after every other escape is gone.
        for (escape, text) in escapes where escape != "\\e" { s = s.replacing(escape, with: text) }
        return s.replacing("\\e", with: "\\")
    }
}

/// Runs the CLI in-process and captures what it writes to stdout.
private enum Run {
    final class Capture: Sendable {
        let stdout = Mutex<[UInt8]>([])
    }

    static func cli(_ arguments: [String]) -> (Int32, String) {
        let capture = Capture()
        let io = IO(write: { fd, bytes in
            guard fd == 1 else { return }
            capture.stdout.withLock { $0.append(contentsOf: bytes) }
        }, stdin: 0, environment: [:])
        let status = CLI.run(arguments, io: io, backends: .all)
        return (status, capture.stdout.withLock { String(decoding: $0, as: UTF8.self) })
    }
}
