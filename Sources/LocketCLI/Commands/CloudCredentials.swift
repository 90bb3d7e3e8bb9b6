import Glibc
import LocketCore
import LocketSupport

/// Credentials for cloud tools that ask a program for them when they need
/// them (issue 29): the AWS SDKs' `credential_process` and kubectl's exec
/// credential plugins. What they print goes to standard output whole or not
/// at all; every failure is one line on stderr and a non-zero status, which
/// both tools show to their user.
extension Commands {
    /// `locket aws-credential [ATTRIBUTES] [--ref REF] [--prompt TEXT]`, and
    /// `locket aws-credential add [ATTRIBUTES] [--accessible CLASS] [-U]`.
    static func awsCredential(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        switch invocation.operands {
        case []:
            for option in ["accessible", "update"] where invocation.has(option) {
                throw UsageError(message: "\(invocation.command.option(long: option)!.spelling) is for aws-credential add", command: "aws-credential")
            }
            return try printAWSCredential(invocation, context)
        case ["add"]:
            for option in ["ref", "prompt"] where invocation.has(option) {
                throw UsageError(message: "--\(option) is for reading a credential, not aws-credential add", command: "aws-credential")
            }
            return try addAWSCredential(invocation, context)
        default:
            throw UsageError(message: "aws-credential takes no operand but add", command: "aws-credential")
        }
    }

    private static func printAWSCredential(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        let query = try namedQuery(invocation, command: "aws-credential")
        let keychain = try context.openKeychain()
        guard let item = try AccessPrompt.run(keychain, invocation, context, { try keychain.search(query, limit: .one, returnData: true) }).first,
              let data = item.data else { throw KeychainError(.itemNotFound) }
        let credential = try AWSCredential.stored(data: data, account: item[.account])
        // An expired credential would only fail the SDK's next call, less clearly.
        if let expiration = credential.expiration, let seconds = AWSCredential.seconds(ofTimestamp: expiration), seconds <= context.io.environment.time.seconds() {
            throw KeychainError(.notAvailable, "the AWS credential in the item expired at \(expiration)",
                                hint: "store a fresh one with 'locket aws-credential add -U' and the same attributes")
        }
        let output = try credential.processOutput()
        output.withUnsafeBytes { context.out.raw($0) }
        context.out.text("\n")
        return 0
    }

    private static func addAWSCredential(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        _ = try namedQuery(invocation, command: "aws-credential")
        let itemClass = try AttributeOptions.itemClass(invocation)
        var item = NewItem(itemClass: itemClass)
        try AttributeOptions.given(invocation, itemClass) { try item.set($0, $1) }
        if item.attributes[.description] == nil { try item.set(.description, Array(AWSCredential.kind.utf8)) }
        if let accessible = invocation.value("accessible") { item.accessible = try ProtectionClass(parsing: accessible) }
        guard !Prompt.isTerminal(context.io.stdin) else {
            throw KeychainError(.interactionNotAllowed, "aws-credential add reads the credential from standard input, not a terminal",
                                hint: "pipe it in: aws configure export-credentials --profile OLD | locket aws-credential add ...")
        }
        // A CI job's idle stdin fails instead of hanging, as -w's does.
        var ready = pollfd(fd: context.io.stdin, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, context.io.implicitStdinWait) != 0 else {
            throw KeychainError(.interactionNotAllowed, "no AWS credential on standard input and no terminal to ask at",
                                hint: "pipe it in: aws configure export-credentials --profile OLD | locket aws-credential add ...")
        }
        let input = try Prompt.readAll(context.io.stdin, what: "standard input", contents: "the AWS credential", limit: AWSCredential.maximumInput)
        let credential = try AWSCredential.parse(input: input)
        if let expiration = credential.expiration, let seconds = AWSCredential.seconds(ofTimestamp: expiration), seconds <= context.io.environment.time.seconds() {
            throw KeychainError(.param, "the AWS credential expired at \(expiration); nothing was stored")
        }
        let keychain = try context.openKeychain()
        try keychain.add(item, data: try credential.itemData(), updateExisting: invocation.has("update"))
        return 0
    }

    /// `locket kube-credential [ATTRIBUTES] [--ref REF] [--prompt TEXT]`: a
    /// token (the secret of a password item), or with `--class identity` a
    /// client certificate and its private key.
    static func kubeCredential(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        let apiVersion = try ExecCredential.apiVersion(context.environment)
        let output: SecureBytes
        if AttributeOptions.isIdentity(invocation) {
            let query = try AttributeOptions.identityQuery(invocation)
            guard !query.certificate.attributes.isEmpty || !query.key.attributes.isEmpty else {
                throw UsageError(message: "name the identity: --label, --tag or --hash", command: "kube-credential")
            }
            let keychain = try context.openKeychain()
            let identity: Identity
            do {
                identity = try AccessPrompt.run(keychain, invocation, context) { try keychain.keys.exportableIdentity(query) }.identity
            } catch let error as KeychainError where error.code == .dataNotAvailable {
                throw KeychainError(.dataNotAvailable, "the identity's private key is non-extractable: kubectl needs the key itself (clientKeyData), which such a key never gives",
                                    hint: "give kubectl a token, or a key imported without --non-extractable")
            }
            // The leaf and the issuers the server may lack; a root is the server's to have.
            let certificates = ([identity.certificate] + identity.chain.filter { !$0.isSelfIssued }).map(\.pem).joined()
            output = try ExecCredential.clientCertificate(certificates, key: try identity.key.pkcs8PEM(), apiVersion: apiVersion)
        } else {
            let query = try namedQuery(invocation, command: "kube-credential")
            let keychain = try context.openKeychain()
            guard let data = try AccessPrompt.run(keychain, invocation, context, { try keychain.search(query, limit: .one, returnData: true) }).first?.data else {
                throw KeychainError(.itemNotFound)
            }
            output = try ExecCredential.token(data, apiVersion: apiVersion)
        }
        output.withUnsafeBytes { context.out.raw($0) }
        context.out.text("\n")
        return 0
    }

    /// The attribute options as a query that names something: a lookup that
    /// took the first item of the keychain would hand a tool the wrong secret.
    private static func namedQuery(_ invocation: Invocation, command: String) throws -> Query {
        let query = try AttributeOptions.query(invocation)
        guard !query.attributes.isEmpty || query.persistentRef != nil else {
            throw UsageError(message: "name the item: -s SERVICE, -a ACCOUNT, -l LABEL\(command == "aws-credential" && invocation.operands == ["add"] ? "" : " or --ref REF")",
                             command: command)
        }
        return query
    }
}
