import Glibc
import LocketCore
import LocketSupport

/// `import` of key files and `export` of one certificate, key or identity (SPEC §12).
extension Commands {
    /// The options that apply to a key file only.
    static let keyFileOptions = ["format", "non-extractable", "accessible", "access-group", "label", "tag", "access-control",
                                 "application-password-stdin"]

    /// What `import` of a key file and `key generate` apply to the keys they add.
    static func keyItemOptions(_ invocation: Invocation) throws -> KeyItemOptions {
        var options = KeyItemOptions()
        options.label = invocation.value("label")
        options.tag = invocation.value("tag").map { Array($0.utf8) }
        options.extractable = !invocation.has("non-extractable")
        options.accessible = try invocation.value("accessible").map { try ProtectionClass(parsing: $0) }
        options.accessGroup = invocation.value("access-group")
        options.accessControl = try invocation.value("access-control").map { try AccessControl(parsing: $0) }
        return options
    }

    /// A key file (PKCS#12, PEM, DER, OpenSSH), parsed whole, then added in one transaction.
    static func importKeyFile(_ data: SecureBytes, _ path: String, _ invocation: Invocation, _ context: Context) throws -> Int32 {
        for option in ["update", "identity"] where invocation.has(option) {
            throw UsageError(message: "--\(option) is for a locket backup, not a key file", command: "import")
        }
        let fromStdin = invocation.has("passphrase-stdin")
        if path == "-" && fromStdin {
            throw UsageError(message: "--passphrase-stdin can't be used with a key file on standard input", command: "import")
        }
        let format = try invocation.value("format").map { try KeyFileFormat.named($0) }
        let options = try keyItemOptions(invocation)
        if path == "-" && invocation.has("application-password-stdin") {
            throw UsageError(message: "--application-password-stdin can't be used with a key file on standard input", command: "import")
        }
        let keychain = try context.openKeychain()
        let file = try KeyImport.parse(data, format: format) {
            try Prompt.password(context, prompt: "Passphrase of \(path): ", confirm: false, fromStdin: fromStdin)
        }
        var outcomes: [KeyFileOutcome] = []
        try AccessPrompt.run(keychain, invocation, context) {
            outcomes = []
            try keychain.keys.addKeyFile(file, options: options) { outcomes.append($0) }
        }
        KeyFileReport.print(outcomes, format: file.format, context)
        return 0
    }

    /// `export --format pem|der|openssh|pkcs12`: one certificate, key or identity.
    static func exportKeyItem(_ format: String, _ invocation: Invocation, _ context: Context) throws -> Int32 {
        for option in ["recipient", "kdf"] where invocation.has(option) {
            throw UsageError(message: "--\(option) is for --format backup", command: "export")
        }
        let defaultClass = ["pkcs12": "identity", "openssh": "keys", "tss2": "keys"][format] ?? "cert"
        let className = invocation.value("class") ?? defaultClass
        let output = invocation.value("out")
        if let output, !invocation.has("force"), OutputFile.exists(output) {
            throw KeychainError(.param, "\(output) exists; locket does not replace it", hint: "add -f/--force to replace it")
        }
        let keychain = try context.openKeychain()
        let bytes: SecureBytes
        if ["identity", "idnt", "kSecClassIdentity"].contains(className) {
            guard format == "pkcs12" else { throw UsageError(message: "an identity exports as --format pkcs12", command: "export") }
            var query = IdentityQuery()
            for (attribute, value) in try exportTerms(invocation, .certificate) { try query.match(attribute, value) }
            let (item, identity) = try AccessPrompt.run(keychain, invocation, context) { try keychain.keys.exportableIdentity(query) }
            let passphrase = try Prompt.password(context, prompt: "Passphrase for the PKCS#12 file: ", confirm: true,
                                                 fromStdin: invocation.has("passphrase-stdin"))
            bytes = try SecureBytes(copying: try identity.pkcs12(passphrase: passphrase, friendlyName: String(decoding: item.certificate[.label], as: UTF8.self)))
        } else {
            let itemClass = try ItemClass(parsing: className)
            var query = Query(itemClass: itemClass)
            for (attribute, value) in try exportTerms(invocation, itemClass) { try query.match(attribute, value) }
            query.persistentRef = try invocation.value("ref").map(parseRef)
            switch (itemClass, format) {
            case (.certificate, "pem"): bytes = try SecureBytes(copying: Array(try keychain.keys.certificate(query).certificate.pem.utf8))
            case (.certificate, "der"): bytes = try SecureBytes(copying: try keychain.keys.certificate(query).certificate.der)
            // A private key with access control is exported with its proof, asked for at the terminal.
            case (.key, "pem"): bytes = try AccessPrompt.run(keychain, invocation, context) { try keychain.keys.exportableKey(query) }.key.pkcs8PEM()
            // A Secure Enclave key's TPM key file: the TPM's wrapped blob, nothing secret, usable only with this TPM.
            case (.key, "tss2"): bytes = try SecureBytes(copying: Array(try AccessPrompt.run(keychain, invocation, context) { try keychain.keys.tpmKeyFile(query) }.file.pem.utf8))
            case (.key, "openssh"):
                let (item, key) = try AccessPrompt.run(keychain, invocation, context) { try keychain.keys.exportableKey(query) }
                bytes = try key.openSSHPrivateKey(comment: String(decoding: item[.label], as: UTF8.self))
            default:
                throw UsageError(message: "a \(itemClass.name) does not export as \(format): certificates as pem or der, keys as pem (PKCS#8) or openssh, Secure Enclave keys as tss2, identities as pkcs12", command: "export")
            }
        }
        if let output {
            try bytes.withUnsafeBytes { try OutputFile.write(output, $0, replace: invocation.has("force")) }
        } else {
            if (format == "der" || format == "pkcs12") && Prompt.isTerminal(1) {
                throw KeychainError(.param, "\(format) is binary and is not written to a terminal", hint: "add -o FILE, or redirect standard output")
            }
            bytes.withUnsafeBytes { context.out.raw($0) }
        }
        return 0
    }

    /// The query options export takes: label, tag, hash, access group.
    private static func exportTerms(_ invocation: Invocation, _ itemClass: ItemClass) throws -> [(Attribute, [UInt8])] {
        var terms: [(Attribute, [UInt8])] = []
        for attribute: Attribute in [.label, .applicationTag, .fingerprint, .accessGroup] {
            guard let text = invocation.value(attribute.longName) else { continue }
            terms.append((attribute, try AttributeValue.parse(attribute, Array(text.utf8), for: itemClass)))
        }
        return terms
    }

    static func parseRef(_ text: String) throws -> [UInt8] {
        guard let bytes = PersistentRef.decode(text) else {
            throw KeychainError(.param, "'\(Printable.clip(text, max: 40))' is not a persistent reference (32 hexadecimal digits)")
        }
        return bytes
    }
}

/// What `import` of a key file prints: one line per item (class, label,
/// and its hash: a key's application label, a certificate's SHA-256), then the count.
enum KeyFileReport {
    static func print(_ outcomes: [KeyFileOutcome], format: KeyFileFormat, _ context: Context) {
        let added = outcomes.filter(\.added).count
        if context.json {
            var w = JSONWriter()
            w.beginObject()
            w.key("format"); w.string(format.rawValue)
            w.key("imported"); w.int(Int64(added))
            w.key("existing"); w.int(Int64(outcomes.count - added))
            w.key("items")
            w.beginArray()
            for outcome in outcomes {
                let item = outcome.item
                w.beginObject()
                w.key("class"); w.string(item.itemClass.rawValue)
                w.key("added"); w.bool(outcome.added)
                w.key("label"); w.string(utf8: item[.label])
                if item.itemClass == .key {
                    w.key("keyClass"); w.string(utf8: item[.keyClass])
                    w.key("type"); w.string(utf8: item[.type])
                    w.key("applicationLabel"); w.string(Hex.encode(item[.applicationLabel]))
                } else {
                    w.key("sha256Fingerprint"); w.string(Hex.encode(item[.fingerprint]))
                    w.key("publicKeyHash"); w.string(Hex.encode(item[.publicKeyHash]))
                }
                w.endObject()
            }
            w.endArray()
            w.endObject()
            context.out.line(w.result)
            return
        }
        for outcome in outcomes {
            let item = outcome.item
            let label = Printable.escape(String(decoding: item[.label], as: UTF8.self), backslashes: false)
            let what = item.itemClass == .key
                ? "\(String(decoding: item[.keyClass], as: UTF8.self)) \(String(decoding: item[.type], as: UTF8.self)) key '\(label)', application label \(Hex.encode(item[.applicationLabel]))"
                : "certificate '\(label)', sha256 \(Hex.encode(item[.fingerprint]))"
            context.out.line((outcome.added ? "added " : "already in the keychain: ") + what)
        }
        let existing = outcomes.count - added
        context.out.line("imported \(added) item\(added == 1 ? "" : "s") from a \(format.rawValue) file" + (existing > 0 ? ", \(existing) already in the keychain" : ""))
    }
}
