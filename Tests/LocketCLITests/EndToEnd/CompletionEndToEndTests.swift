import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 5, item 5: `locket completion bash|zsh|fish` prints a script that
/// each shell loads and that completes a command name (and option values).
/// That the scripts equal the files in completions/ is DriftTests' job.
final class EndToEndCompletionTests: EndToEndCase {
    /// `locket completion SHELL`, written into the sandbox; returns the path.
    func script(_ shell: String, name: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let result = locket(["completion", shell], file: file, line: line)
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        XCTAssertEqual(result.err, "", file: file, line: line)
        XCTAssertTrue(result.out.hasSuffix("\n"), file: file, line: line)
        let directory = sandbox.root + "/completion-\(shell)"
        if !fileExists(directory) { XCTAssertEqual(mkdir(directory, 0o755), 0, file: file, line: line) }
        let path = directory + "/" + name
        writeFile(path, result.out, file: file, line: line)
        return path
    }

    /// Runs `shell ARGS` in the sandbox (HOME there, so no user start-up files).
    func shell(_ path: String, _ arguments: [String], file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        runTool(path, arguments, timeout: 10, file: file, line: line)
    }

    func testUnknownShellIsAUsageError() {
        assertUsage(locket("completion", "powershell"))
        assertUsage(locket("completion"))
    }

    // MARK: - bash

    func testBashScriptLoadsAndCompletes() throws {
        let bash = try SystemTool.require("bash", for: "the bash completion test")
        let path = try script("bash", name: "locket.bash")
        let syntax = shell(bash, ["-n", path])
        XCTAssertEqual(syntax.status, 0, "bash -n: \(syntax.err)")
        // Sourcing registers _locket for locket.
        let registered = shell(bash, ["--norc", "--noprofile", "-c", "source \"$1\" && complete -p locket", "bash", path])
        XCTAssertEqual(registered.status, 0, registered.summary)
        XCTAssertEqual(registered.out, "complete -F _locket locket\n")
        XCTAssertEqual(registered.err, "")

        func complete(_ words: [String], file: StaticString = #filePath, line: UInt = #line) -> [String] {
            let driver = """
                source "$1"; shift
                COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
                _locket locket "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
                printf '%s\\n' "${COMPREPLY[@]}"
                """
            let result = shell(bash, ["--norc", "--noprofile", "-c", driver, "bash", path] + words, file: file, line: line)
            XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
            XCTAssertEqual(result.err, "", file: file, line: line)
            return result.out.split(separator: "\n").map(String.init).sorted()
        }
        XCTAssertEqual(complete(["locket", "fi"]), ["find"])
        XCTAssertEqual(complete(["locket", "exe"]), ["exec"])
        XCTAssertEqual(complete(["locket", "cr"]), ["credential", "credential-socket"])
        XCTAssertEqual(complete(["locket", "kub"]), ["kube-credential"])
        XCTAssertEqual(complete(["locket", "co"]), ["completion"])
        XCTAssertEqual(complete(["locket", "--json", "st"]), ["status"])
        XCTAssertEqual(complete(["locket", "exec", "--mas"]), ["--mask"])
        XCTAssertEqual(complete(["locket", "exec", "--m"]), ["--mask", "--max-stale"])
        XCTAssertEqual(complete(["locket", "completion", ""]).filter { !$0.hasPrefix("-") }, ["bash", "fish", "zsh"])
        XCTAssertEqual(complete(["locket", "find", "--class", ""]), ["cert", "genp", "identity", "inet", "keys"])
        XCTAssertTrue(complete(["locket", "add", "--accessible", "when-"]).contains("when-unlocked"))
        // Keychain names come from $XDG_DATA_HOME/locket.
        ok("-k", "work", "init", "--no-password")
        ok("-k", "wombat", "init", "--no-password")
        let names = shell(bash, ["--norc", "--noprofile", "-c", """
            source "$1"; COMP_WORDS=(locket -k wo); COMP_CWORD=2; COMPREPLY=(); _locket locket wo -k; printf '%s\\n' "${COMPREPLY[@]}"
            """, "bash", path])
        XCTAssertEqual(names.out.split(separator: "\n").map(String.init).sorted(), ["wombat", "work"], names.summary)
    }

    // MARK: - zsh

    func testZshScriptLoadsAndCompletes() throws {
        let zsh = try SystemTool.require("zsh", for: "the zsh completion test")
        let path = try script("zsh", name: "_locket")
        let directory = (path as NSString).deletingLastPathComponent
        let syntax = shell(zsh, ["-n", path])
        XCTAssertEqual(syntax.status, 0, "zsh -n: \(syntax.err)")
        // Found through fpath by compinit, as installed: #compdef registers it for locket.
        let registered = shell(zsh, ["-f", "-c", """
            fpath=("$1" $fpath); autoload -U compinit; compinit -u -d "$1/zcompdump"
            print -r -- "$_comps[locket]"; autoload -U +X _locket && print loaded
            """, "zsh", directory])
        XCTAssertEqual(registered.status, 0, registered.summary)
        XCTAssertEqual(registered.out, "_locket\nloaded\n")
        XCTAssertEqual(registered.err, "")

        // Real completion in an interactive zsh on a pseudo-terminal (zpty): every candidate
        // offered to compadd is appended to a file. (Bounded: runTool kills it after 10 s.)
        func complete(_ line: String, file: StaticString = #filePath, line sourceLine: UInt = #line) -> [String] {
            let out = directory + "/candidates"
            unlink(out)
            let driver = """
                zmodload zsh/zpty || exit 3
                zpty z zsh -f -i
                zpty -w z "PROMPT=; fpath=(${(q)1} \\$fpath); autoload -U compinit; compinit -u -d ${(q)1}/zcompdump"
                zpty -w z 'compadd () { local -a __hits; builtin compadd -O __hits "$@"; print -rl -- $__hits >> '${(q)2}'; builtin compadd "$@" }'
                zpty -w z 'zle-line-init() { print -n "LINE""INIT" }; zle -N zle-line-init'
                zpty -w z "echo R''EADY"
                # Type only once the line editor reads (raw mode): earlier input may be lost.
                zpty -r z reply '*READY*LINEINIT*' || exit 4
                zpty -w -n z "$3"$'\\t'
                zpty -w -n z $'\\C-u'
                zpty -w z "echo D''ONE"
                zpty -r z reply '*DONE*' || exit 5
                zpty -d z
                """
            let result = shell(zsh, ["-f", "-c", driver, "zsh", directory, out, line], file: file, line: sourceLine)
            XCTAssertEqual(result.status, 0, result.summary, file: file, line: sourceLine)
            return Set((readText(out) ?? "").split(separator: "\n").map(String.init)).sorted()
        }
        XCTAssertEqual(complete("locket fi"), ["find"])
        XCTAssertEqual(complete("locket exe"), ["exec"])
        XCTAssertEqual(complete("locket find --class "), ["cert", "genp", "identity", "inet", "keys"])
    }

    // MARK: - fish

    func testFishScriptLoadsAndCompletes() throws {
        let fish = try SystemTool.require("fish", for: "the fish completion test")
        let path = try script("fish", name: "locket.fish")
        let syntax = shell(fish, ["-n", path])
        XCTAssertEqual(syntax.status, 0, "fish -n: \(syntax.err)")
        func complete(_ line: String, file: StaticString = #filePath, line sourceLine: UInt = #line) -> [String] {
            let result = shell(fish, ["--no-config", "-c", "source $argv[1]; complete -C $argv[2]", path, line],
                               file: file, line: sourceLine)
            XCTAssertEqual(result.status, 0, result.summary, file: file, line: sourceLine)
            XCTAssertEqual(result.err, "", file: file, line: sourceLine)
            // "candidate<TAB>description" lines.
            return result.out.split(separator: "\n").map { String($0.split(separator: "\t", maxSplits: 1).first ?? "") }.sorted()
        }
        XCTAssertEqual(complete("locket fi"), ["find"])
        XCTAssertEqual(complete("locket exe"), ["exec"])
        XCTAssertEqual(complete("locket find --class "), ["cert", "genp", "identity", "inet", "keys"])
        XCTAssertTrue(complete("locket add --accessible ").contains("when-unlocked"))
        XCTAssertTrue(complete("locket exec --").contains("--mask"))
        ok("-k", "work", "init", "--no-password")
        XCTAssertTrue(complete("locket -k ").contains("work"), "keychain names")
    }
}
