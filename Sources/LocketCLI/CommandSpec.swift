/// One option of a command, as the parser, `--help`, the completions and the
/// man-page check all see it.
public struct OptionSpec: Sendable {
    /// Whether the option takes a value.
    public enum Arity: Sendable, Equatable {
        case flag
        case value(String)
        /// `-w [SECRET]`: the next argument is the value unless it is missing or an option.
        case optionalValue(String)
        /// `--generate[=N]`: a value only when attached with `=`; alone, a flag.
        case attachedValue(String)
    }

    /// What a shell should offer after the option.
    public enum Completion: Sendable {
        case none, file, keychain
        /// Computed when a completion script is made, not each time the
        /// table is: some lists are sorted out of dictionaries.
        case values(@Sendable () -> [String])
    }

    public let long: String
    public let short: Character?
    public let arity: Arity
    public let repeatable: Bool
    public let help: String
    public let completion: Completion

    init(_ long: String, _ short: Character? = nil, _ arity: Arity = .flag, repeatable: Bool = false,
         completion: Completion = .none, _ help: String) {
        self.long = long
        self.short = short
        self.arity = arity
        self.repeatable = repeatable
        self.help = help
        self.completion = completion
    }

    /// `-a, --account ACCOUNT` as help and the man page show it.
    public var display: String {
        var s = short.map { "-\($0), " } ?? ""
        s += "--\(long)"
        switch arity {
        case .flag: break
        case .value(let name): s += " \(name)"
        case .optionalValue(let name): s += " [\(name)]"
        case .attachedValue(let name): s += "[=\(name)]"
        }
        return s
    }

    /// `-a/--account`, as error messages name an option.
    public var spelling: String { short.map { "-\($0)/--\(long)" } ?? "--\(long)" }
}

/// One command: its options, its one-line usage and what runs it.
public struct CommandSpec: Sendable {
    public let name: String
    public let usage: String
    public let summary: String
    public let options: [OptionSpec]
    /// Pairs of long names that can't be given together.
    public let conflicts: [(String, String)]
    /// Whether the command takes operands after its options.
    public let operands: Bool
    let run: @Sendable (Invocation, Context) throws -> Int32
    /// The first operand ends the options: the rest is another command's argv (`exec`).
    public var operandsEndOptions = false
    /// Words that, given first (and not after `--`), name a subcommand
    /// whose options follow instead of ending them (`secret-service enable --force`).
    public var subcommands: [String] = []
    /// Every failure is one line on stderr: the hint folded into the error
    /// line, no usage lines. For commands whose stderr another program
    /// shows its user whole (the AWS CLI's `credential_process`, kubectl's
    /// exec plugins), where a second line reads as a second error.
    public var oneLineFailures = false

    public func option(long: String) -> OptionSpec? { options.first { $0.long == long } }

    /// `locket find [ATTRIBUTES] ...`, the command's usage line.
    public var usageLine: String { usage.isEmpty ? "locket \(name)" : "locket \(name) \(usage)" }
}
