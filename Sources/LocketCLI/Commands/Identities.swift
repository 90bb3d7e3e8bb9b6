import LocketCore
import LocketSupport

/// `find --class identity` and `delete --class identity`: identities are a
/// view over a certificate and its private key (SPEC §12).
extension Commands {
    static func findIdentities(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        if invocation.has("password") || invocation.has("show-data") {
            throw KeychainError(.param, "an identity has no single value to print", hint: "export it with export --format pkcs12 --class identity")
        }
        let query = try AttributeOptions.identityQuery(invocation)
        let limit = try AttributeOptions.matchLimit(invocation)
        let found = try context.openKeychain().keys.identities(query, limit: limit)
        let options = ItemPrinter.Options(data: false, ref: invocation.has("show-ref"))
        if context.json {
            var w = JSONWriter()
            if limit != .one { context.out.text("[") }
            for (i, identity) in found.enumerated() {
                w.reset()
                IdentityPrinter.json(identity, options, into: &w)
                if i > 0 { context.out.text(",") }
                context.out.bytes(w.bytes)
            }
            if limit != .one { context.out.text("]") }
            context.out.text("\n")
            return 0
        }
        for (i, identity) in found.enumerated() {
            if i > 0 { context.out.text("\n") }
            var text = ByteWriter()
            IdentityPrinter.text(identity, options, into: &text)
            context.out.bytes(text.bytes)
        }
        return 0
    }

    static func deleteIdentities(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        let query = try AttributeOptions.identityQuery(invocation)
        if query.certificate.isEmpty && query.key.isEmpty && !invocation.has("all") {
            throw KeychainError(.param, "delete without attributes would delete every identity", hint: "add --all if that is what you mean")
        }
        let (certificates, keys) = try context.openKeychain().keys.deleteIdentities(query)
        context.err("locket: deleted \(certificates) certificate\(certificates == 1 ? "" : "s") and \(keys) private key\(keys == 1 ? "" : "s")"
                    + (keys < certificates ? " (a key another certificate still pairs with stays)" : ""))
        return 0
    }
}

/// An identity printed: text shows the certificate's fields, then the key's
/// under `key-` names; JSON is `{"class": "idnt", "label", "certificate": {...}, "key": {...}}`.
enum IdentityPrinter {
    static func text(_ identity: IdentityItem, _ options: ItemPrinter.Options, into out: inout ByteWriter) {
        out.literal("class: idnt\n")
        var certificate = ByteWriter()
        ItemPrinter.text(identity.certificate, options, into: &certificate)
        var key = ByteWriter()
        ItemPrinter.text(identity.key, options, into: &key)
        for line in certificate.bytes.split(separator: 0x0a) where !line.starts(with: Array("class: ".utf8)) {
            line.withUnsafeBytes { out.raw($0) }
            out.byte(0x0a)
        }
        for line in key.bytes.split(separator: 0x0a) where !line.starts(with: Array("class: ".utf8)) {
            if !line.starts(with: Array("key-".utf8)) { out.literal("key-") }
            line.withUnsafeBytes { out.raw($0) }
            out.byte(0x0a)
        }
    }

    static func json(_ identity: IdentityItem, _ options: ItemPrinter.Options, into w: inout JSONWriter) {
        w.beginObject()
        w.key("class"); w.string("idnt")
        w.key("label"); w.string(utf8: identity.certificate[.label])
        w.key("certificate"); ItemPrinter.json(identity.certificate, options, into: &w)
        w.key("key"); ItemPrinter.json(identity.key, options, into: &w)
        w.endObject()
    }
}
