import LocketCore

/// The one list of commands and options (SPEC §8). Parsing, `help`, the
/// completions and the man-page drift test all read it.
public enum CommandTable {
    /// Options every command accepts, before or after the command name.
    public static let globalOptions: [OptionSpec] = [
        OptionSpec("keychain", "k", .value("KEYCHAIN"), completion: .keychain,
                   "the keychain: a path, or a NAME in $XDG_DATA_HOME/locket (default: login)"),
        OptionSpec("entitlements", "e", .value("PATH"), completion: .file,
                   "the calling app's entitlements file (default: none, the owner)"),
        OptionSpec("json", nil, .flag, "print JSON instead of text (also LOCKET_FORMAT=json)"),
        OptionSpec("help", "h", .flag, "show help"),
        OptionSpec("max-stale", nil, .value("DURATION"),
                   "a remote keychain whose server is unreachable: read after-first-unlock items from the cache 'keychain sync' made, if no older than DURATION (30m, 12h, 7d; default: never)"),
    ]

    /// `--version`, accepted only in place of a command.
    public static let versionOption = OptionSpec("version", nil, .flag, "print the version")

    /// Every command, in help order: its name and what makes its spec. A
    /// command line makes only the command it names (`command(named:)`):
    /// making all of them was a tenth of a `find`'s instructions.
    static let builders: [(name: String, make: @Sendable () -> CommandSpec)] = [
        ("init", {
            CommandSpec(name: "init", usage: "[--no-password] [--password-stdin] [--kdf COST] [--tpm]",
                        summary: "create a keychain and set its password",
                        options: [OptionSpec("no-password", nil, .flag, "make a keychain without a password (always unlocked)"), passwordStdin,
                                  kdf, bindToTPM],
                        conflicts: [("no-password", "password-stdin"), ("no-password", "kdf"), ("no-password", "tpm")], operands: false,
                        run: Commands.initialize)
        }),
        ("add", {
            CommandSpec(name: "add", usage: "[ATTRIBUTES] [-w [SECRET] | --data-file PATH|- | --generate[=N] [--charset SET] [--print]] [--accessible CLASS | --access-control CLASS:FLAGS [--application-password-stdin]] [--synchronizable] [--prompt TEXT] [-U]",
                        summary: "add an item",
                        options: passwordAttributes + [
                            secretOption, dataFile,
                            OptionSpec("generate", nil, .attachedValue("N"),
                                       "store a random secret of N characters (default 32) without printing it"),
                            charset,
                            OptionSpec("print", nil, .flag, "with --generate, print the generated secret"),
                            accessible,
                            OptionSpec("synchronizable", nil, .flag, "make the item synchronizable (Apple's kSecAttrSynchronizable; it leaves the device only if its class lets it)"),
                            OptionSpec("update", "U", .flag, "update the item if one with the same primary key exists"),
                            accessControl, applicationPasswordStdin, prompt,
                        ],
                        conflicts: [("password", "data-file"), ("generate", "password"), ("generate", "data-file")],
                        operands: false, run: Commands.add)
        }),
        ("find", {
            CommandSpec(name: "find", usage: "[ATTRIBUTES] [--accessible CLASS] [--synchronizable[=yes|no|any]] [--ref REF] [--limit N | --all] [-w | -g] [--show-ref] [--prompt TEXT] [--application-password-stdin]",
                        summary: "find items and print their attributes or secret",
                        options: attributeOptions(accessGroupShort: false) + [
                            accessibleTerm, synchronizable, ref,
                            OptionSpec("limit", nil, .value("N"), "return up to N items (default 1)"),
                            OptionSpec("all", nil, .flag, "return every matching item"),
                            OptionSpec("password", "w", .flag, "print only the secret"),
                            OptionSpec("show-data", "g", .flag, "print the attributes and the secret"),
                            OptionSpec("no-newline", "n", .flag, "with -w, print no newline after the secret"),
                            OptionSpec("show-ref", nil, .flag, "print the persistent reference"),
                            prompt, applicationPasswordStdin,
                        ],
                        conflicts: [("limit", "all"), ("password", "show-data")], operands: false, run: Commands.find)
        }),
        ("update", {
            CommandSpec(name: "update", usage: "[ATTRIBUTES] [--synchronizable[=yes|no|any]] [--ref REF] [--set NAME=VALUE]... [--set-attr NAME=VALUE]... [--remove-attr NAME]... [--accessible CLASS] [-w [SECRET] | --data-file PATH|-] [--prompt TEXT] [--application-password-stdin]",
                        summary: "change every matching item, all or nothing",
                        options: attributes + [
                            synchronizable, ref,
                            OptionSpec("accessible", nil, .value("CLASS"), completion: .values { ProtectionClass.allCases.map(\.name) },
                                       "move the items to this protection class, each sealed again under its key"),
                            OptionSpec("set", nil, .value("NAME=VALUE"), repeatable: true,
                                       "set an attribute (long name or four-char code)"),
                            OptionSpec("set-attr", nil, .value("NAME=VALUE"), repeatable: true,
                                       "set a free-form attribute (genp), keeping the others; service and username set -s and -a"),
                            OptionSpec("remove-attr", nil, .value("NAME"), repeatable: true,
                                       "remove a free-form attribute (genp); service and username empty -s and -a"),
                            secretOption, dataFile, prompt, applicationPasswordStdin,
                        ],
                        conflicts: [("password", "data-file")], operands: false, run: Commands.update)
        }),
        ("delete", {
            CommandSpec(name: "delete", usage: "[ATTRIBUTES] [--accessible CLASS] [--synchronizable[=yes|no|any]] [--ref REF] [--all]",
                        summary: "delete every matching item",
                        options: attributes + [accessibleTerm, synchronizable, ref, OptionSpec("all", nil, .flag, "allow a query that matches every item")],
                        conflicts: [], operands: false, run: Commands.delete)
        }),
        ("dump", {
            CommandSpec(name: "dump", usage: "[--data] [--class CLASS]", summary: "list every item",
                        options: [OptionSpec("data", nil, .flag, "include the secrets"), itemClass],
                        conflicts: [], operands: false, run: Commands.dump)
        }),
        ("lock", {
            CommandSpec(name: "lock", usage: "[--all]", summary: "forget the unlocked keys",
                        options: [OptionSpec("all", nil, .flag, "forget every key, as a reboot would")],
                        conflicts: [], operands: false, run: Commands.lock)
        }),
        ("unlock", {
            CommandSpec(name: "unlock", usage: "[--timeout SECONDS|none] [--password-stdin | --password-file PATH | --credential NAME]",
                        summary: "unlock the keychain for later commands",
                        options: [timeout, passwordStdin, passwordFile, credentialName],
                        conflicts: [("password-stdin", "password-file"), ("password-stdin", "credential"), ("password-file", "credential")],
                        operands: false, run: Commands.unlock)
        }),
        ("passwd", {
            CommandSpec(name: "passwd", usage: "[--rotate] [--kdf COST] | --remove [--yes]",
                        summary: "change, set or remove the keychain's password",
                        options: [OptionSpec("rotate", nil, .flag, "also replace every class key and re-seal every item"),
                                  kdf,
                                  OptionSpec("remove", nil, .flag, "remove the password (deletes when-passcode-set items)"),
                                  OptionSpec("yes", nil, .flag, "with --remove, delete when-passcode-set items without asking")],
                        conflicts: [("remove", "rotate"), ("remove", "kdf")], operands: false, run: Commands.passwd)
        }),
        ("settings", {
            CommandSpec(name: "settings", usage: "[--timeout SECONDS|none] [--presence-reuse SECONDS] [--lock-on-sleep yes|no] [--lock-on-screen-lock yes|no] [--tpm|--no-tpm [--password-stdin]]",
                        summary: "show or change the keychain's settings",
                        options: [OptionSpec("timeout", nil, .value("SECONDS"), completion: .values { ["none", "300", "3600"] },
                                             "the auto-lock timeout unlock uses by default (none: never)"),
                                  presenceReuse,
                                  OptionSpec("lock-on-sleep", nil, .value("yes|no"), completion: .values { ["yes", "no"] },
                                             "the Secret Service provider locks the keychain before the machine sleeps (default yes)"),
                                  OptionSpec("lock-on-screen-lock", nil, .value("yes|no"), completion: .values { ["yes", "no"] },
                                             "the Secret Service provider locks the keychain when the session's screen locks (default yes)"),
                                  bindToTPM,
                                  OptionSpec("no-tpm", nil, .flag, "free the keychain from the TPM: it opens elsewhere with its password again"),
                                  passwordStdin],
                        conflicts: [("tpm", "no-tpm")], operands: false, run: Commands.settings)
        }),
        ("status", {
            CommandSpec(name: "status", usage: "[--tpm]", summary: "show whether the keychain is locked, what it holds, and which TPM holds its Secure Enclave keys",
                        options: [OptionSpec("tpm", nil, .flag, "also ask the TPM what it is and its dictionary-attack lockout counter (starts locket-tpm)")],
                        conflicts: [], operands: false, run: Commands.status)
        }),
        ("restore", {
            CommandSpec(name: "restore", usage: "--accept-rollback [--password-stdin]",
                        summary: "accept an older copy of the keychain that was put back",
                        options: [OptionSpec("accept-rollback", nil, .flag, "accept the keychain as it is, older than this device has seen"),
                                  passwordStdin],
                        conflicts: [], operands: false, run: Commands.restore)
        }),
        ("exec", {
            CommandSpec(name: "exec", usage: "[--env NAME=REF]... [--env-file FILE]... [--file NAME=REF]... [--mask] [--github-env] -- COMMAND [ARG]...",
                        summary: "run a command with secrets in its environment",
                        options: [OptionSpec("env", nil, .value("NAME=REF"), repeatable: true,
                                             "set NAME to the secret REF names: SERVICE/ACCOUNT or SCHEME://[USER@]HOST[:PORT][/PATH]"),
                                  OptionSpec("env-file", nil, .value("FILE"), repeatable: true, completion: .file,
                                             "set the variables of a dotenv FILE; values locket:REF are secrets"),
                                  OptionSpec("file", nil, .value("NAME=REF"), repeatable: true,
                                             "put the secret REF names in a private file on tmpfs and set NAME to its path"),
                                  OptionSpec("mask", nil, .flag, "replace the secrets with <redacted> in the command's stdout and stderr"),
                                  OptionSpec("github-env", nil, .flag,
                                             "in GitHub Actions, append the variables to $GITHUB_ENV for later steps (COMMAND optional)")],
                        conflicts: [], operands: true, run: Commands.exec, operandsEndOptions: true)
        }),
        ("inject", {
            CommandSpec(name: "inject", usage: "[-i TEMPLATE] [-o FILE [-f]]",
                        summary: "render a template, replacing {{ locket:REF }} with secrets",
                        options: [OptionSpec("in", "i", .value("TEMPLATE"), completion: .file,
                                             "read the template from TEMPLATE (default: standard input)"),
                                  outFile, force],
                        conflicts: [], operands: false, run: Commands.inject)
        }),
        ("export", {
            CommandSpec(name: "export", usage: "--format backup [-o FILE [-f]] [--recipient KEY]... [--passphrase-stdin] [--kdf COST] | --format pem|der|openssh|pkcs12|tss2 [--class keys|cert|identity] [--label LABEL] [--tag TAG] [--hash SHA256] [--ref REF] [--access-group GROUP] [-o FILE [-f]] [--passphrase-stdin] [--prompt TEXT] [--application-password-stdin]",
                        summary: "write a backup of every item that may leave this device, or one certificate, key or identity",
                        options: [OptionSpec("format", nil, .value("FORMAT"), completion: .values { ["backup", "pem", "der", "openssh", "pkcs12", "tss2"] },
                                             "backup (locket's encrypted backup), pem or der (a certificate; pem with --class keys: PKCS#8), openssh (a key), pkcs12 (an identity), tss2 (a Secure Enclave key's TPM key file)"),
                                  outFile, force,
                                  OptionSpec("recipient", nil, .value("KEY"), repeatable: true, completion: .file,
                                             "seal to this X25519 public key (64 hex digits, or a file holding them) instead of a passphrase"),
                                  passphraseStdin, kdf,
                                  OptionSpec("class", nil, .value("CLASS"), completion: .values { ["keys", "cert", "identity"] },
                                             "what to export: keys, cert or identity (default: from --format)"),
                                  OptionSpec("label", "l", .value("LABEL"), "the item with this label"), tag, hash, ref,
                                  keyAccessGroup, prompt, applicationPasswordStdin],
                        conflicts: [("passphrase-stdin", "application-password-stdin")], operands: false, run: Commands.export)
        }),
        ("import", {
            CommandSpec(name: "import", usage: "[--from FORMAT] [-U] [--passphrase-stdin] [--identity FILE] [--format FORMAT] [--non-extractable] [--accessible CLASS | --access-control CLASS:FLAGS [--application-password-stdin]] [--access-group GROUP] [--label LABEL] [--tag TAG] [FILE|DIR|-]",
                        summary: "restore a backup, import another tool's export, or import keys and certificates",
                        options: [OptionSpec("from", nil, .value("FORMAT"), completion: .values { MigrationFormat.allCases.map(\.rawValue) },
                                             "the export's format: pass, bitwarden-json, 1password-csv, keepassxc-csv or security-dump"),
                                  OptionSpec("update", "U", .flag, "update items whose primary key exists instead of skipping them"),
                                  passphraseStdin,
                                  OptionSpec("identity", nil, .value("FILE"), completion: .file,
                                             "the X25519 secret key (64 hex digits, mode 600) that opens a backup sealed to recipients"),
                                  OptionSpec("format", nil, .value("FORMAT"), completion: .values { KeyFileFormat.allCases.map(\.rawValue) },
                                             "a key file's format: pkcs12, pem, der or openssh (default: detected)"),
                                  nonExtractable, accessible, keyAccessGroup, keyLabel, tag, accessControl, applicationPasswordStdin],
                        conflicts: [("passphrase-stdin", "application-password-stdin")], operands: true, run: Commands.importItems)
        }),
        ("generate", {
            CommandSpec(name: "generate", usage: "[--length N] [--charset SET] [-n]",
                        summary: "print a random secret",
                        options: [OptionSpec("length", nil, .value("N"),
                                             "8 to 1024 characters (default 32)"),
                                  charset,
                                  OptionSpec("no-newline", "n", .flag, "print no newline after the secret")],
                        conflicts: [], operands: false, run: Commands.generate)
        }),
        ("otp", {
            CommandSpec(name: "otp", usage: "[ATTRIBUTES] [--ref REF] [-n] [--prompt TEXT] [--application-password-stdin]",
                        summary: "print the one-time code of an item whose secret is an otpauth:// URI",
                        options: passwordAttributes + [ref, OptionSpec("no-newline", "n", .flag, "print no newline after the code"),
                                                        prompt, applicationPasswordStdin],
                        conflicts: [], operands: false, run: Commands.otp)
        }),
        ("credential", {
            CommandSpec(name: "credential", usage: "get|store|erase",
                        summary: "git credential helper (also run as git-credential-locket)",
                        options: [], conflicts: [], operands: true, run: Commands.credential)
        }),
        ("docker-credential", {
            CommandSpec(name: "docker-credential", usage: "store|get|erase|list",
                        summary: "docker credential helper (also run as docker-credential-locket)",
                        options: [], conflicts: [], operands: true, run: Commands.dockerCredential)
        }),
        ("credential-socket", { credentialSocket }),
        ("aws-credential", { awsCredential }),
        ("kube-credential", { kubeCredential }),
        ("completion", {
            CommandSpec(name: "completion", usage: "bash|zsh|fish", summary: "print a shell completion script",
                        options: [], conflicts: [], operands: true, run: Commands.completion)
        }),
        ("key", {
            CommandSpec(name: "key", usage: "generate --type TYPE [--token secure-enclave|software-enclave] [--label LABEL] [--tag TAG] [--non-extractable] [--accessible CLASS | --access-control CLASS:FLAGS [--application-password-stdin]] [--access-group GROUP] | public [--label LABEL] [--tag TAG] [--ref REF] [--openssh | --hex] | sign|verify|encrypt|decrypt [--label LABEL] [--tag TAG] [--ref REF] [--access-group GROUP] --algorithm ALGORITHM [-i FILE] [-o FILE [-f]] [--signature FILE] [--prompt TEXT]",
                        summary: "make a key pair inside the keychain, print a stored key's public key, or sign, verify, encrypt or decrypt with it",
                        options: [OptionSpec("type", nil, .value("TYPE"), completion: .values { KeyGenerationType.commandLineChoices.map(\.rawValue) },
                                             "generate: ed25519, x25519, p256, p384, p521, rsa2048, rsa3072 or rsa4096"),
                                  OptionSpec("token", nil, .value("TOKEN"), completion: .values { ["secure-enclave", "software-enclave"] },
                                             "generate: secure-enclave makes a P-256 key inside the TPM that never leaves it; software-enclave a non-extractable P-256 key in the keychain"),
                                  OptionSpec("label", "l", .value("LABEL"), "the key's label"), tag, nonExtractable, accessible, keyAccessGroup, ref,
                                  OptionSpec("openssh", nil, .flag, "print the public key as an OpenSSH line instead of PEM"),
                                  OptionSpec("hex", nil, .flag, "print an X25519 public key as 64 hex digits (export --recipient takes it)"),
                                  accessControl, applicationPasswordStdin, prompt]
                            + keyUseOptions,
                        conflicts: [("openssh", "hex")], operands: true, run: Commands.key)
        }),
        ("help", {
            CommandSpec(name: "help", usage: "[COMMAND]", summary: "show help for locket or a command",
                        options: [], conflicts: [], operands: true, run: Commands.help)
        }),
        ("ssh-agent", {
            SSHAgentCommand.spec(source: { context in try context.agentKeySource() })
        }),
        ("secret-service", { Commands.secretServiceSpec }),
        ("pam", { Commands.pamSpec }),
        ("keychain", {
            CommandSpec(name: "keychain",
                        usage: "add-remote NAME URL [--password-service SERVICE] [--replace] | enroll [--name NAME] | devices | approve DEVICE --fingerprint FINGERPRINT --groups GROUP,... | revoke DEVICE | audit [--since WHEN] | verify [--expect VIEW] | sync | recover [--yes] [--password-stdin]",
                        summary: "name a keychain in PostgreSQL, and manage the devices that share it",
                        options: [OptionSpec("password-service", nil, .value("SERVICE"),
                                             "the database password is the generic password of this service in the login keychain"),
                                  OptionSpec("replace", nil, .flag, "add-remote: re-point the remote already registered as NAME to URL"),
                                  OptionSpec("name", nil, .value("NAME"), "enroll: the name admins see (default: the host name)"),
                                  OptionSpec("groups", nil, .value("GROUP,..."), "approve: the access groups whose keys the device gets"),
                                  OptionSpec("fingerprint", nil, .value("FINGERPRINT"),
                                             "approve: the device's fingerprint as its enroll printed it (hex or words), compared out of band"),
                                  OptionSpec("expect", nil, .value("VIEW"),
                                             "verify: another device's view (what its verify printed); fails on a rollback or a fork"),
                                  OptionSpec("since", nil, .value("WHEN"), "audit: only rows since WHEN (a date YYYY-MM-DD[THH:MM:SSZ], or an age: 30m, 12h, 7d)"),
                                  OptionSpec("yes", nil, .flag, "recover: go ahead without asking, once what was lost is printed"),
                                  OptionSpec("password-stdin", nil, .flag, "recover: read the keychain's password from the first line of standard input")],
                        conflicts: [], operands: true, run: { invocation, context in try context.backends.keychainCommand(invocation, context) })
        }),
    ]

    /// Every command, in help order (help, completions, the drift tests).
    public static let commands: [CommandSpec] = builders.map { $0.make() }

    /// The command named `name`, made alone.
    public static func command(named name: String) -> CommandSpec? { builders.first { $0.name == name }?.make() }

    /// The version `--version` prints.
    public static let version = "0.1.0"
}
