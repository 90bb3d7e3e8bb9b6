import LocketCore
import LocketSupport

/// A usage error: exit status 2 with the command's usage line.
package struct UsageError: Error {
    let message: String
    let command: String?

    package init(message: String, command: String?) {
        self.message = message
        self.command = command
    }
}

/// What the parser made of the arguments.
package struct Invocation {
    let command: CommandSpec
    /// One option as given: its values in order (flags have one empty value
    /// per occurrence), how it was spelled the last time (`-s` or
    /// `--service`), and whether it came with no value where one is
    /// optional (`-w` alone). A list searched by name: a command line gives
    /// a handful, and dictionaries cost more to make than to search.
    private struct Given {
        let long: String
        var values: [String]
        var spelling: String
        var bare: Bool
    }
    private var given: [Given] = []
    package private(set) var operands: [String] = []
    /// One of the command's `subcommands`, given first.
    private(set) var subcommand: String?

    init(command: CommandSpec) { self.command = command }

    private func index(_ long: String) -> Int? { given.firstIndex { $0.long == long } }

    package func has(_ long: String) -> Bool { index(long) != nil }
    package func value(_ long: String) -> String? { index(long).flatMap { given[$0].values.last } }
    func all(_ long: String) -> [String] { index(long).map { given[$0].values } ?? [] }
    func isBare(_ long: String) -> Bool { index(long).map { given[$0].bare } ?? false }
    func spelling(_ long: String) -> String? { index(long).map { given[$0].spelling } }

    mutating func name(subcommand word: String) { subcommand = word }

    mutating func record(_ spec: OptionSpec, spelled: String, value: String?) throws {
        let bare: Bool
        if value == nil, case .optionalValue = spec.arity { bare = true } else { bare = false }
        guard let k = index(spec.long) else {
            given.append(Given(long: spec.long, values: [value ?? ""], spelling: spelled, bare: bare))
            return
        }
        guard spec.repeatable else {
            throw UsageError(message: "\(spec.spelling) given more than once", command: command.name)
        }
        given[k].values.append(value ?? "")
        given[k].spelling = spelled
        if bare { given[k].bare = true }
    }

    mutating func operand(_ s: String) { operands.append(s) }
}

/// Options that apply to the whole run.
package struct GlobalOptions {
    package var keychain: String?
    var entitlements: String?
    /// `--max-stale DURATION`: a remote keychain's offline cache may answer reads (SPEC §17).
    var maxStale: String?
    var json = false
    var help = false
}

/// The hand-written parser: getopt-like short clusters (`-wn`, `-aVALUE`),
/// `--long VALUE` and `--long=VALUE`, `--` to end options. Global options may
/// come before or after the command name.
enum Parser {
    enum Result {
        case version
        case run(GlobalOptions, Invocation)
    }

    /// `extra` is a command parsed as if it were in the table, in place of
    /// the table's entry of the same name (the test program that runs
    /// `ssh-agent` over a directory of key files instead of the keychain).
    static func parse(_ arguments: [String], extra: CommandSpec? = nil) throws -> Result {
        var globals = GlobalOptions()
        var i = 0
        // Global options before the command.
        while i < arguments.count, arguments[i].hasPrefix("-"), arguments[i] != "-", arguments[i] != "--" {
            let arg = arguments[i]
            if arg == "--version" { return .version }
            guard let (index, spelled, inline) = match(arg, in: CommandTable.globalOptions) else {
                throw UsageError(message: "unknown option '\(Printable.clip(arg))'", command: nil)
            }
            let spec = CommandTable.globalOptions[index]
            let value = try takeValue(spec, spelled: spelled, inline: inline, arguments, &i, command: nil)
            apply(spec, value, to: &globals)
            i += 1
        }
        guard i < arguments.count, !arguments[i].hasPrefix("-") else {
            if globals.help { return .run(globals, Invocation(command: CommandTable.command(named: "help")!)) }
            throw UsageError(message: i < arguments.count ? "unexpected '\(Printable.clip(arguments[i]))' before the command" : "no command given", command: nil)
        }
        let name = arguments[i]
        guard let command = extra.flatMap({ $0.name == name ? $0 : nil }) ?? CommandTable.command(named: name) else {
            throw UsageError(message: "unknown command '\(Printable.clip(name))'", command: nil)
        }
        i += 1
        var invocation = Invocation(command: command)
        var optionsEnded = false
        var dashes = false
        while i < arguments.count {
            let arg = arguments[i]
            if !optionsEnded && !dashes && invocation.operands.isEmpty && invocation.subcommand == nil && command.subcommands.contains(arg) {
                invocation.name(subcommand: arg)
                i += 1
                continue
            }
            if optionsEnded || !arg.hasPrefix("-") || arg == "-" {
                guard command.operands else {
                    // Where -w takes a secret, a leftover argument is often one typed
                    // in the wrong place (`add -w -U s3cret`): not repeated on screen or in a CI log.
                    if command.options.contains(where: { $0.long == "password" && $0.arity != .flag }) {
                        throw UsageError(message: "unexpected argument (not shown: it may be a secret); give a secret as --password=SECRET, or -w alone with the secret on stdin",
                                         command: command.name)
                    }
                    throw UsageError(message: "unexpected argument '\(Printable.clip(arg))'", command: command.name)
                }
                invocation.operand(arg)
                if command.operandsEndOptions { optionsEnded = true }
                i += 1
                continue
            }
            if arg == "--" { optionsEnded = true; dashes = true; i += 1; continue }
            if arg.hasPrefix("--") {
                if let (index, spelled, inline) = match(arg, in: command.options) {
                    let spec = command.options[index]
                    let value = try takeValue(spec, spelled: spelled, inline: inline, arguments, &i, command: command.name)
                    try invocation.record(spec, spelled: spelled, value: value)
                } else if let (index, spelled, inline) = match(arg, in: CommandTable.globalOptions) {
                    let spec = CommandTable.globalOptions[index]
                    apply(spec, try takeValue(spec, spelled: spelled, inline: inline, arguments, &i, command: command.name), to: &globals)
                } else {
                    throw UsageError(message: "unknown option '\(Printable.clip(String(arg.split(separator: "=", maxSplits: 1)[0])))' for \(command.name)", command: command.name)
                }
                i += 1
                continue
            }
            // A cluster of short options: flags, then possibly one that takes the rest or the next argument.
            var chars = Array(arg.dropFirst())
            while !chars.isEmpty {
                let c = chars.removeFirst()
                // By index, here and in `match`: an optional OptionSpec costs
                // its generic metadata at run time (a fortieth of a `find`).
                let spec: OptionSpec
                if let k = command.options.firstIndex(where: { $0.short == c }) {
                    spec = command.options[k]
                } else if let k = CommandTable.globalOptions.firstIndex(where: { $0.short == c }) {
                    spec = CommandTable.globalOptions[k]
                } else {
                    throw UsageError(message: "unknown option '\(Printable.clip("-\(c)"))' for \(command.name)", command: command.name)
                }
                let inline = chars.isEmpty ? nil : String(chars)
                var value: String?
                if spec.arity != .flag {
                    value = try takeValue(spec, spelled: "-\(c)", inline: inline, arguments, &i, command: command.name)
                    chars = []
                }
                if CommandTable.globalOptions.contains(where: { $0.long == spec.long }) && !command.options.contains(where: { $0.long == spec.long }) {
                    apply(spec, value, to: &globals)
                } else {
                    try invocation.record(spec, spelled: "-\(c)", value: value)
                }
            }
            i += 1
        }
        for (a, b) in command.conflicts where invocation.has(a) && invocation.has(b) {
            throw UsageError(message: "\(command.option(long: a)!.spelling) can't be used with \(command.option(long: b)!.spelling)",
                             command: command.name)
        }
        return .run(globals, invocation)
    }

    /// The index of the option `arg` names (`--long`, `--long=value`) in
    /// `options`, how it was spelled and its inline value.
    private static func match(_ arg: String, in options: [OptionSpec]) -> (Int, String, String?)? {
        if arg.hasPrefix("--") {
            let body = arg.dropFirst(2)
            let parts = body.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            guard let index = options.firstIndex(where: { $0.long == name }) else { return nil }
            return (index, "--\(name)", parts.count > 1 ? String(parts[1]) : nil)
        }
        guard arg.count >= 2, let index = options.firstIndex(where: { $0.short == arg.dropFirst().first }) else { return nil }
        let rest = String(arg.dropFirst(2))
        return (index, String(arg.prefix(2)), rest.isEmpty ? nil : rest)
    }

    private static func takeValue(_ spec: OptionSpec, spelled: String, inline: String?, _ arguments: [String],
                                  _ i: inout Int, command: String?) throws -> String? {
        switch spec.arity {
        case .flag:
            if inline != nil { throw UsageError(message: "\(spec.spelling) takes no value", command: command) }
            return nil
        case .value(let name):
            if let inline { return inline }
            guard i + 1 < arguments.count else {
                throw UsageError(message: "\(spec.spelling) needs a value (\(name))", command: command)
            }
            i += 1
            return arguments[i]
        case .attachedValue:
            return inline
        case .optionalValue:
            // `--password=VALUE` and `-wVALUE` always take VALUE, even one that starts with '-'.
            if let inline { return inline }
            // `-w` followed by nothing or by another option means "prompt or read stdin".
            guard i + 1 < arguments.count else { return nil }
            let next = arguments[i + 1]
            guard next.hasPrefix("-") else {
                i += 1
                return next
            }
            // Generated secrets often start with '-'. Split into options, `-w -lX9secret`
            // would store an empty secret and the label "X9secret"; taken as the secret,
            // `-w -x` would store a typo. Only an option standing alone ends -w's value;
            // anything else is refused, and not echoed: it may be the secret.
            if next == "--" || standsAlone(next, command: command) { return nil }
            throw UsageError(message: "the argument after \(spelled) starts with '-' but is no option of \(command ?? "locket"): "
                                + "pipe a secret that starts with '-' on stdin with -w alone, or write --\(spec.long)=SECRET",
                             command: command)
        }
    }

    /// Whether `argument` is exactly one option of `command` (or a global
    /// option) on its own: `-a`, `--account`, `--account=x`; not a cluster
    /// (`-Un`) nor a short option with its value attached (`-lX9`).
    private static func standsAlone(_ argument: String, command: String?) -> Bool {
        let options = (command.flatMap { CommandTable.command(named: $0)?.options } ?? []) + CommandTable.globalOptions
        if argument.hasPrefix("--") {
            let name = argument.dropFirst(2).split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0]
            return options.contains { $0.long == name }
        }
        let chars = Array(argument)
        return chars.count == 2 && options.contains { $0.short == chars[1] }
    }

    private static func apply(_ spec: OptionSpec, _ value: String?, to globals: inout GlobalOptions) {
        switch spec.long {
        case "keychain": globals.keychain = value
        case "entitlements": globals.entitlements = value
        case "max-stale": globals.maxStale = value
        case "json": globals.json = true
        case "help": globals.help = true
        default: break
        }
    }
}
