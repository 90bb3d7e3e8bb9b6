import LocketCore

// Secrets for services and cloud tools (issue 29): systemd's LoadCredential=
// socket, unattended unlock, AWS credential_process and kubectl's exec
// credential plugin.
extension CommandTable {
    /// `unlock`'s unattended password sources.
    static let passwordFile = OptionSpec("password-file", nil, .value("PATH"), completion: .file,
                                         "read the password from PATH, a private regular file of yours or root's (one line)")
    static let credentialName = OptionSpec("credential", nil, .value("NAME"),
                                           "read the password from $CREDENTIALS_DIRECTORY/NAME, a credential systemd gives the unit (LoadCredentialEncrypted=)")

    static let credentialSocket = CommandSpec(
        name: "credential-socket", usage: "[--socket PATH] [--policy FILE]",
        summary: "answer systemd's LoadCredential= from the keychain, as a policy file allows",
        options: [
            OptionSpec("socket", nil, .value("PATH"), completion: .file,
                       "listen at PATH (default: /run/locket/credentials.sock for root, else $XDG_RUNTIME_DIR/locket/credentials.sock)"),
            OptionSpec("policy", nil, .value("FILE"), completion: .file,
                       "which unit gets which credential (default: /etc/locket/credentials.json for root, else $XDG_CONFIG_HOME/locket/credentials.json)"),
        ],
        conflicts: [], operands: false, run: Commands.credentialSocket)

    static let awsCredential = CommandSpec(
        name: "aws-credential", usage: "[ATTRIBUTES] [--ref REF] [--prompt TEXT] | add [ATTRIBUTES] [--accessible CLASS] [-U]",
        summary: "print an AWS credential_process answer from an item, or (add) store one read from standard input",
        options: passwordAttributes + [
            ref, prompt, accessible,
            OptionSpec("update", "U", .flag, "update the item if one with the same primary key exists"),
        ],
        conflicts: [], operands: true, run: Commands.awsCredential, oneLineFailures: true)

    static let kubeCredential = CommandSpec(
        name: "kube-credential", usage: "[ATTRIBUTES] [--ref REF] [--prompt TEXT]",
        summary: "print a kubectl ExecCredential: a token, or with --class identity a client certificate and key",
        options: attributes + [ref, prompt],
        conflicts: [], operands: false, run: Commands.kubeCredential, oneLineFailures: true)
}
