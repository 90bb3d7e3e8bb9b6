import LocketCore
import LocketSupport

/// `--help` and `locket help`, generated from the command table.
enum Help {
    static func text(for command: CommandSpec?) -> String {
        guard let command else { return overview }
        var s = "usage: \(command.usageLine)\n\n\(command.summary)\n"
        if !command.options.isEmpty {
            s += "\noptions:\n" + table(command.options)
        }
        s += "\nglobal options:\n" + table(CommandTable.globalOptions)
        return s
    }

    static var overview: String {
        var s = """
        usage: locket [-k KEYCHAIN] [-e ENTITLEMENTS] [--json] COMMAND [OPTIONS]

        A command-line keychain: items with attributes, sealed at rest, readable
        according to their protection class while the keychain is unlocked.

        commands:

        """
        let width = CommandTable.commands.map(\.name.count).max()! + 2
        for command in CommandTable.commands {
            s += "  " + command.name.padding(width) + command.summary + "\n"
        }
        s += "\nglobal options:\n" + table(CommandTable.globalOptions + [CommandTable.versionOption])
        s += "\nRun 'locket help COMMAND' for a command's options; 'man locket' for the rest.\n"
        return s
    }

    private static func table(_ options: [OptionSpec]) -> String {
        let width = min(34, options.map { $0.display.count + ($0.short == nil ? 4 : 0) }.max()! + 2)
        var s = ""
        for option in options {
            let left = (option.short == nil ? "    " : "") + option.display
            s += "  " + left.padding(width)
            if left.count >= width { s += "\n  " + "".padding(width) }
            s += option.help + "\n"
        }
        return s
    }
}

extension String {
    func padding(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}

extension Commands {
    /// `locket help [COMMAND]`
    static func help(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        guard let name = invocation.operands.first else {
            context.out.text(Help.text(for: nil))
            return 0
        }
        guard invocation.operands.count == 1, let command = CommandTable.command(named: name) else {
            throw UsageError(message: "no command '\(Printable.clip(name, max: 40))'", command: "help")
        }
        context.out.text(Help.text(for: command))
        return 0
    }

    /// `locket completion bash|zsh|fish`
    static func completion(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        guard invocation.operands.count == 1, let shell = Completions.Shell(rawValue: invocation.operands[0]) else {
            throw UsageError(message: "name one shell: bash, zsh or fish", command: "completion")
        }
        context.out.text(Completions.script(for: shell))
        return 0
    }
}
