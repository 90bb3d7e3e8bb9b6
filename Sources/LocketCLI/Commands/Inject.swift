import Glibc
import LocketCore
import LocketSupport

extension Commands {
    /// `locket inject [-i TEMPLATE] [-o FILE [-f]]`: every reference is
    /// resolved before anything is written; one failure writes nothing.
    static func inject(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        if invocation.has("force") && !invocation.has("out") {
            throw UsageError(message: "-f/--force needs -o/--out", command: "inject")
        }
        let output = invocation.value("out")
        // Refuse early, before the keychain is opened; the write itself checks again.
        if let output, !invocation.has("force"), OutputFile.exists(output) {
            throw KeychainError(.param, "\(output) exists; locket does not replace it", hint: "add -f/--force to replace it")
        }
        let source = try readTemplate(invocation.value("in"), context)
        let template: Template
        do {
            template = try Template(parsing: source)
        } catch let error as Template.Malformed {
            throw KeychainError(.param, "\(templateName(invocation)) line \(error.line): \(error.reason)")
        }
        if source.isEmpty { context.warn("the template is empty") }

        // Resolve everything first; size the output exactly, so no buffer
        // holding a secret is ever grown (and its old block left unwiped).
        let resolver = SecretResolver(context)
        resolver.prefetch(template.pieces.compactMap { piece -> String? in
            if case .placeholder(let p) = piece { return p.reference }
            return nil
        })
        var secrets: [SecureBytes] = []
        var size = 0
        for piece in template.pieces {
            switch piece {
            case .text(let range): size += range.count
            case .literal(let bytes): size += bytes.count
            case .placeholder(let p):
                let secret: SecureBytes
                do {
                    secret = try resolver.secret(p.reference)
                    if p.filter == nil { try checkText(secret) }
                } catch let error as KeychainError {
                    throw error.with(detail: "\(templateName(invocation)) line \(p.line): \(p.reference): \(error.message)")
                }
                secrets.append(secret)
                size += p.filter == .base64 ? (secret.count + 2) / 3 * 4 : secret.count
            }
        }
        let rendered = try SecureBytes(count: size)
        rendered.withUnsafeMutableBytes { out in
            var n = 0
            var k = 0
            func put(_ b: UInt8) { out[n] = b; n += 1 }
            for piece in template.pieces {
                switch piece {
                case .text(let range): for b in source[range] { put(b) }
                case .literal(let bytes): for b in bytes { put(b) }
                case .placeholder(let p):
                    let secret = secrets[k]
                    k += 1
                    secret.withUnsafeBytes { raw in
                        if p.filter == .base64 { Base64.encode(raw, put) } else { for b in raw { put(b) } }
                    }
                }
            }
        }
        if let output {
            try rendered.withUnsafeBytes { try OutputFile.write(output, $0, replace: invocation.has("force")) }
        } else {
            context.out.flush()
            rendered.withUnsafeBytes { context.io.write(1, $0) }
        }
        return 0
    }

    private static func templateName(_ invocation: Invocation) -> String {
        invocation.value("in") ?? "template"
    }

    /// A secret placed as is in a text file must be text: UTF-8 without NUL.
    private static func checkText(_ secret: SecureBytes) throws {
        guard secret.withUnsafeBytes({ UTF8Check.isValid($0, allowingNUL: false) }) else {
            throw KeychainError(.param, "the secret is binary (a NUL byte or invalid UTF-8) and can't go into a text template",
                                hint: "write {{ locket:REF | base64 }} for its base64")
        }
    }

    /// The template: `-i FILE` (a regular file) or standard input.
    private static func readTemplate(_ path: String?, _ context: Context) throws -> [UInt8] {
        guard let path else { return try Prompt.readAll(context.io.stdin, what: "standard input", contents: "the template").bytes }
        return try Prompt.readRegularFile(path, contents: "the template", hint: "pipe a template on standard input instead").bytes
    }
}
