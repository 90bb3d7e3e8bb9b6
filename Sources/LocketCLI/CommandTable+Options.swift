import LocketCore

// Options several commands share: the item attributes, secrets and
// passwords from stdin, and what keys and certificates brought (issue 13):
// the item class, a key's tag, a certificate's hash, and what `import` and
// `key generate` apply to the keys they add.
extension CommandTable {
    /// The attribute options of add, update, delete and otp, made once: each
    /// command that appends to this shares its elements instead of making
    /// sixteen options again (the whole table is built by every command).
    static let attributes = attributeOptions()
    /// Those of add and otp, which make and read passwords: without the key
    /// and certificate terms (`--tag`, `--hash`, the last two), which only
    /// find, update and delete take (keys come in through import and key generate).
    static let passwordAttributes = Array(attributes.dropLast(2))

    /// Attribute options shared by add, find, update and delete. `find` keeps
    /// `-g` for "show the secret" as in `security(1)`, so there the access
    /// group is long-only.
    static func attributeOptions(accessGroupShort: Bool = true) -> [OptionSpec] {
        [
            itemClass,
            OptionSpec("account", "a", .value("ACCOUNT"), "account name"),
            OptionSpec("service", "s", .value("SERVICE"), "service (genp); with --class inet, -s is the server"),
            OptionSpec("server", nil, .value("SERVER"), "server (inet)"),
            OptionSpec("label", "l", .value("LABEL"), "label (add defaults it to the service or server)"),
            OptionSpec("description", "D", .value("KIND"), "description (kind)"),
            OptionSpec("comment", "j", .value("COMMENT"), "comment"),
            OptionSpec("generic", "G", .value("VALUE"), "generic attribute (genp)"),
            OptionSpec("creator", "c", .value("CODE"), "creator, a four-character code"),
            OptionSpec("type", "C", .value("CODE"), "type, a four-character code"),
            OptionSpec("security-domain", "d", .value("DOMAIN"), "security domain (inet)"),
            OptionSpec("protocol", "r", .value("PROTOCOL"), completion: .values { FourCharCodes.protocols.keys.sorted() },
                       "protocol (inet): https, http, ssh, ... or a four-character code"),
            OptionSpec("auth-type", "t", .value("TYPE"), completion: .values { FourCharCodes.authenticationTypes.keys.sorted() },
                       "authentication type (inet): default, http-basic, ... or a four-character code"),
            OptionSpec("port", "P", .value("PORT"), "port (inet), 0-65535"),
            OptionSpec("path", "p", .value("PATH"), "path (inet)"),
            accessGroupShort ? keyAccessGroup : OptionSpec("access-group", nil, .value("GROUP"), "access group (no -g here: -g is --show-data)"),
            freeFormAttribute,
            tag, hash,
        ]
    }

    /// A free-form attribute (SPEC §18), as the Secret Service's clients give them.
    static let freeFormAttribute = OptionSpec("attr", nil, .value("NAME=VALUE"), repeatable: true,
                                              "a free-form attribute (genp), as Secret Service clients set them (xdg:schema, application, ...); service and username are -s and -a")
    static let passwordStdin = OptionSpec("password-stdin", nil, .flag, "read the password from the first line of standard input")
    static let bindToTPM = OptionSpec("tpm", nil, .flag,
                                      "bind the keychain to this machine's TPM: its file and password open nothing elsewhere (losing the TPM loses it)")
    static let passphraseStdin = OptionSpec("passphrase-stdin", nil, .flag, "read the backup's passphrase from the first line of standard input")
    static let secretOption = OptionSpec("password", "w", .optionalValue("SECRET"),
                                         "the secret: prompted at a terminal, else read from stdin; a SECRET here is visible to other processes")
    static let dataFile = OptionSpec("data-file", nil, .value("PATH"), completion: .file, "read the secret's exact bytes from PATH (- for stdin)")
    static let timeout = OptionSpec("timeout", nil, .value("SECONDS"), completion: .values { ["none", "300", "3600"] },
                                    "lock again after SECONDS without use (none: never; default: the settings timeout, 300)")
    static let ref = OptionSpec("ref", nil, .value("REF"), "the item with this persistent reference")
    // Help texts are literals: the table is built by every command, `find`
    // included, and a string built from a list costs it more than it shows.
    static let charset = OptionSpec("charset", nil, .value("SET"), completion: .values { PasswordGenerator.Charset.allCases.map(\.rawValue) },
                                    "characters of a generated secret: alnum, symbols, hex, base64url or digits (default alnum)")
    static let kdf = OptionSpec("kdf", nil, .value("COST"), completion: .values { KDFLevel.allCases.map(\.rawValue) },
                                "Argon2id cost of the password: interactive (64 MiB), moderate (256 MiB), sensitive (1 GiB)")


    static let itemClass = OptionSpec("class", nil, .value("CLASS"), completion: .values { ["genp", "inet", "keys", "cert", "identity"] },
                                      "item class: genp (generic password, the default), inet (internet password), keys, cert or identity")
    static let tag = OptionSpec("tag", nil, .value("TAG"), "application tag of a key (keys, identity): the name keys are found by")
    static let hash = OptionSpec("hash", nil, .value("SHA256"), "SHA-256 fingerprint of a certificate (cert, identity), hexadecimal")
    static let keyLabel = OptionSpec("label", "l", .value("LABEL"), "label (default: the file's name for the key, else the certificate's common name)")
    static let keyAccessGroup = OptionSpec("access-group", "g", .value("GROUP"), "access group")
    /// inject, export and key write their result the same way.
    static let outFile = OptionSpec("out", "o", .value("FILE"), completion: .file,
                                    "write to FILE, created with mode 600, instead of standard output")
    static let force = OptionSpec("force", "f", .flag, "with -o, replace FILE if it exists")
    static let accessible = OptionSpec("accessible", nil, .value("CLASS"), completion: .values { ProtectionClass.allCases.map(\.name) },
                                       "protection class: " + ProtectionClass.allCases.map { $0.name }.joined(with: ", ") + " (default when-unlocked)")
    static let nonExtractable = OptionSpec("non-extractable", nil, .flag, "private keys can be used but never leave the keychain (export, find -w refuse)")
    /// SPEC §4: the protection class as a term of find and delete (`update --accessible` moves the matches to it instead).
    static let accessibleTerm = OptionSpec("accessible", nil, .value("CLASS"), completion: .values { ProtectionClass.allCases.map(\.name) },
                                           "only items of this protection class")
    /// Apple's kSecAttrSynchronizable (SPEC §4): without it, a query finds only items that are not synchronizable.
    static let synchronizable = OptionSpec("synchronizable", nil, .attachedValue("yes|no|any"), completion: .values { ["yes", "no", "any"] },
                                           "synchronizable items: yes (the default of the bare option), no (the default without it) or any")
}
