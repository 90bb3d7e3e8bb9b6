import LocketCore
import LocketSupport

/// `locket key generate` and `locket key public` (SPEC §12); `sign`,
/// `verify`, `encrypt` and `decrypt` are in KeyUse.swift (SPEC §13).
extension Commands {
    static func key(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        guard invocation.operands.count == 1, let action = invocation.operands.first else {
            throw UsageError(message: "key takes generate, public, sign, verify, encrypt or decrypt", command: "key")
        }
        if keyUseActions.contains(action) { return try keyUse(action, invocation, context) }
        for option in CommandTable.keyUseOptions where invocation.has(option.long) {
            throw UsageError(message: "\(option.spelling) is for key sign, verify, encrypt or decrypt", command: "key")
        }
        switch action {
        case "generate":
            if invocation.has("ref") { throw UsageError(message: "--ref is for key public", command: "key") }
            guard let name = invocation.value("type") else { throw UsageError(message: "key generate needs --type TYPE", command: "key") }
            let type = try KeyGenerationType.named(name)
            var options = try keyItemOptions(invocation)
            options.token = try invocation.value("token").map { try KeyToken(parsing: $0) } ?? .software
            let keychain = try context.openKeychain()
            let (item, publicKey) = try AccessPrompt.run(keychain, invocation, context) { try keychain.keys.generateKey(type, options: options) }
            try printPublicKey(item, publicKey, invocation, context)
        case "public":
            for option in ["type", "token", "non-extractable", "accessible", "access-control"] where invocation.has(option) {
                throw UsageError(message: "--\(option) is for key generate", command: "key")
            }
            var query = Query(itemClass: .key)
            if let label = invocation.value("label") { try query.match(.label, Array(label.utf8)) }
            if let tag = invocation.value("tag") { try query.match(.applicationTag, Array(tag.utf8)) }
            if let group = invocation.value("access-group") { try query.match(.accessGroup, Array(group.utf8)) }
            query.persistentRef = try invocation.value("ref").map(parseRef)
            let keychain = try context.openKeychain()
            // A key with access control keeps its public half outside the proof; one added
            // before that was kept gives it only from the private key, with the proof.
            let (item, publicKey) = try AccessPrompt.run(keychain, invocation, context) { try keychain.keys.publicKey(query) }
            try printPublicKey(item, publicKey, invocation, context)
        default:
            throw UsageError(message: "key takes generate, public, sign, verify, encrypt or decrypt, not '\(Printable.clip(action, max: 40))'", command: "key")
        }
        return 0
    }

    /// The public key as PEM (SPKI), an OpenSSH line (`--openssh`), or for
    /// X25519 the 64 hex digits `export --recipient` takes (`--hex`).
    private static func printPublicKey(_ item: Item, _ key: AsymmetricKey, _ invocation: Invocation, _ context: Context) throws {
        let text: String
        if invocation.has("openssh") {
            text = try key.openSSHPublicKey(comment: String(decoding: item[.label], as: UTF8.self)) + "\n"
        } else if invocation.has("hex") {
            guard key.keyType == .x25519 else {
                throw KeychainError(.param, "--hex prints x25519 keys (backup recipients); this is a \(key.keyType.rawValue) key")
            }
            text = Hex.encode(key.publicKeyExternalRepresentation) + "\n"
        } else {
            text = key.publicKeyPEM
        }
        if context.json {
            var w = JSONWriter()
            w.beginObject()
            w.key("publicKey"); w.string(text)
            w.key("item"); ItemPrinter.json(item, ItemPrinter.Options(ref: true), into: &w)
            w.endObject()
            context.out.line(w.result)
        } else {
            context.out.text(text)
        }
    }
}
