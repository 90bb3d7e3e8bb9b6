import LocketCore

/// The options of access control (SPEC §14), shared by the commands that
/// add items (`add`; `import` and `key generate` too) and those that read or
/// change them. Listed one by one inside each command's array literal: an
/// array appended with `+` cost `find` 14 k instructions at start-up
/// (copying every OptionSpec of the table).
extension CommandTable {
    static let accessControl = OptionSpec(
        "access-control", nil, .value("CLASS:FLAGS"),
        completion: .values { ProtectionClass.allCases.flatMap { c in AccessControl.Flag.allCases.map { "\(c.name):\($0.rawValue)" } } },
        "protection class and proofs the secret needs: FLAGS is user-presence, password-current-set "
            + "or application-password, comma-separated (instead of --accessible)")
    static let prompt = OptionSpec("prompt", nil, .value("TEXT"),
                                   "the reason shown when the keychain password is asked for (user-presence items)")
    static let applicationPasswordStdin = OptionSpec("application-password-stdin", nil, .flag,
                                                     "read the item's application password from the first line of standard input")
    static let presenceReuse = OptionSpec("presence-reuse", nil, .value("SECONDS"), completion: .values { ["0", "60", "300"] },
                                          "how long one proof of presence serves the same terminal session (0-300, default 0)")
}
