import Glibc
import LocketCore
import LocketSupport

/// `locket key sign|verify|encrypt|decrypt` (SPEC §13): the key is found
/// by the query options, opened inside the engine (a non-extractable key
/// too), used once and wiped; its private part never reaches the output.
///
/// Data comes from standard input or `-i FILE`; the result goes to standard
/// output or `-o FILE` (mode 600, refused when FILE exists unless `-f`,
/// as `export -o` and `inject -o` do). `verify` writes nothing: exit 0 when
/// the signature verifies, else errSecVerifyFailed (exit 32). With `--json`
/// each prints one object: the algorithm, and `resultBase64`, `out` or
/// `verified`.
extension Commands {
    /// The words `key` takes for using a key.
    static let keyUseActions: Set<String> = ["sign", "verify", "encrypt", "decrypt"]

    static func keyUse(_ action: String, _ invocation: Invocation, _ context: Context) throws -> Int32 {
        let usage = { (message: String) in UsageError(message: message, command: "key") }
        for option in ["type", "token", "non-extractable", "accessible", "openssh", "hex"] where invocation.has(option) {
            throw usage("\(invocation.command.option(long: option)!.spelling) is for key generate or key public, not key \(action)")
        }
        guard let algorithmName = invocation.value("algorithm") else { throw usage("key \(action) needs --algorithm ALGORITHM") }
        let verifying = action == "verify"
        if verifying != invocation.has("signature") {
            throw usage(verifying ? "key verify needs --signature FILE" : "--signature is for key verify")
        }
        if verifying && invocation.has("out") { throw usage("key verify writes nothing; its exit status is the answer (-o/--out is for the others)") }
        if invocation.has("force") && !invocation.has("out") { throw usage("-f/--force is for -o/--out") }
        let output = invocation.value("out")
        // Before any work: an output that would be refused at the end must not cost a key use.
        if let output, !invocation.has("force"), OutputFile.exists(output) {
            throw KeychainError(.param, "\(Printable.clip(output, max: 256)) exists; locket does not replace it", hint: "add -f/--force to replace it")
        }
        if invocation.has("application-password-stdin") && invocation.value("in") == nil {
            throw usage("--application-password-stdin reads standard input; give the data with -i/--in FILE")
        }
        let input = try readKeyUseInput(invocation.value("in"), context)
        let signature = try invocation.value("signature").map { try Prompt.readRegularFile($0, limit: 1 << 16, hint: pipeInstead).bytes }
        let query = try keyUseQuery(invocation)

        // Read first, then open: the keychain is held only while the key is used.
        let operation: KeyAlgorithm.Operation = action == "sign" || verifying ? .sign : .encrypt
        let keychain = try context.openKeychain()
        // A key with access control (SPEC §14) asks for its proof at every use.
        let (result, algorithm) = try AccessPrompt.run(keychain, invocation, context) {
            try keychain.keys.withKey(query, needsPrivate: action == "sign" || action == "decrypt") { _, key in
                // Verifying and encrypting need only the public key; a Secure Enclave key signs and decrypts in the TPM.
                let algorithm = try KeyAlgorithm.named(algorithmName, for: key.publicKey, operation: operation)
                switch action {
                case "sign": return (try SecureBytes(copying: try key.sign(input.bytes, algorithm: algorithm)), algorithm)
                case "encrypt": return (try SecureBytes(copying: try key.publicKey.encrypt(input, algorithm: algorithm)), algorithm)
                case "decrypt": return (try key.decrypt(input.bytes, algorithm: algorithm), algorithm)
                default:
                    guard try key.publicKey.verify(signature: signature!, for: input.bytes, algorithm: algorithm) else {
                        throw KeychainError(.verifyFailed, "the signature does not verify with this key and \(algorithm.rawValue)")
                    }
                    return (SecureBytes(), algorithm)
                }
            }
        }
        if let output, !verifying {
            try result.withUnsafeBytes { try OutputFile.write(output, $0, replace: invocation.has("force")) }
        }
        if context.json {
            // Binary results in base64 (the bytes go to the file instead with -o).
            var w = JSONWriter()
            w.beginObject()
            w.key("algorithm"); w.string(algorithm.rawValue)
            if verifying {
                w.key("verified"); w.bool(true)
            } else if let output {
                w.key("out"); w.string(output)
            } else {
                w.key("resultBase64"); result.withUnsafeBytes { w.base64(raw: $0) }
            }
            w.endObject()
            context.out.line(w.result)
        } else if output == nil && !verifying {
            result.withUnsafeBytes { context.out.raw($0) }
        }
        return 0
    }

    /// The key the options name (as `key public` finds it).
    private static func keyUseQuery(_ invocation: Invocation) throws -> Query {
        var query = Query(itemClass: .key)
        if let label = invocation.value("label") { try query.match(.label, Array(label.utf8)) }
        if let tag = invocation.value("tag") { try query.match(.applicationTag, Array(tag.utf8)) }
        if let group = invocation.value("access-group") { try query.match(.accessGroup, Array(group.utf8)) }
        query.persistentRef = try invocation.value("ref").map(parseRef)
        return query
    }

    /// `-i FILE` (a regular file: a FIFO or a directory fails at once, never
    /// hangs) or standard input, up to 16 MiB, in guarded memory (it may be
    /// a plaintext to encrypt).
    private static func readKeyUseInput(_ path: String?, _ context: Context) throws -> SecureBytes {
        guard let path, path != "-" else { return try Prompt.readAll(context.io.stdin, what: "standard input", contents: "the data") }
        return try Prompt.readRegularFile(path, hint: pipeInstead)
    }

    private static let pipeInstead = "pipe the data on standard input instead"
}
