import LocketSupport

/// Bitwarden's unencrypted JSON export (`bw export --format json`, or the
/// web vault's Export as .json): `{"encrypted": false, "folders": [...],
/// "items": [...]}`, item types 1 login, 2 secure note, 3 card, 4 identity,
/// 5 SSH key. An encrypted export is refused: it needs the account's keys.
enum BitwardenJSON {
    static func read(_ input: SecureBytes, _ emit: (MigrationEntry) throws -> Void) throws {
        let root = try JSONValue.parse(input, options: JSONValue.Options(loneSurrogates: true))
        guard case .object = root else { throw KeychainError(.decode, "not a Bitwarden JSON export: the document is not an object") }
        if case .bool(true) = root["encrypted"] ?? .null {
            throw KeychainError(.decode, "this Bitwarden export is encrypted: export the vault again as .json without a password")
        }
        if case .bool(true) = root["passwordProtected"] ?? .null {
            throw KeychainError(.decode, "this Bitwarden export is password protected: export the vault again as .json without a password")
        }
        guard let items = root["items"]?.array else { throw KeychainError(.decode, "not a Bitwarden JSON export: it has no items list") }
        var folders: [String: [UInt8]] = [:]
        for folder in root["folders"]?.array ?? [] {
            let id = String(decoding: folder["id"]?.bytes(in: input) ?? [], as: UTF8.self)
            if !id.isEmpty { folders[id] = folder["name"]?.bytes(in: input) ?? [] }
        }
        let text = BitwardenText(input: input)
        for (k, item) in items.enumerated() {
            let title = (try? text.bytes(item["name"], "name")) ?? []
            let name = String(decoding: title, as: UTF8.self)
            let origin = name.isEmpty ? "item \(k + 1)" : "item \(k + 1) '\(Printable.clip(name, max: 40))'"
            func skip(_ reason: String) throws { try emit(.skipped(MigrationSkip(origin: origin, reason: reason))) }
            guard case .object = item else { try skip("it is not an object"); continue }
            if let deleted = item["deletedDate"], !deleted.isNull { try skip("it is in Bitwarden's trash"); continue }
            let login: Login
            do {
                guard let read = try self.login(item, origin: origin, title: title, folders: folders, text) else {
                    let type = item["type"]?.int(in: input)
                    try skip(type.map { "its type \($0) is not one locket knows (1 login, 2 secure note, 3 card, 4 identity, 5 SSH key)" }
                             ?? "it has no type")
                    continue
                }
                login = read
            } catch let notText as BitwardenText.NotText {
                try skip(notText.reason)
                continue
            }
            for entry in try login.entries() { try emit(entry) }
        }
    }

    /// One item as a login; nil for a type locket does not know.
    private static func login(_ item: JSONValue, origin: String, title: [UInt8], folders: [String: [UInt8]],
                              _ text: BitwardenText) throws -> Login? {
        let input = text.input
        var login = Login(origin: origin)
        login.title = title
        login.created = (item["creationDate"]?.bytes(in: input)).flatMap(ISO8601.milliseconds)
        login.modified = (item["revisionDate"]?.bytes(in: input)).flatMap(ISO8601.milliseconds)
        let notes = try text.bytes(item["notes"], "notes")
        switch item["type"]?.int(in: input) {
        case 1:
            let body = item["login"] ?? .null
            login.username = try text.bytes(body["username"], "login.username")
            login.password = try text.secure(body["password"], "login.password")
            let totp = try text.secure(body["totp"], "login.totp")
            login.totp = totp.count > 0 ? totp : nil
            login.urls = (body["uris"]?.array ?? []).map { $0["uri"]?.bytes(in: input) ?? [] }.filter { !$0.isEmpty }
            if !notes.isEmpty { login.comment.append(notes) }
        case 2:
            login.kind = Array("secure note".utf8)
            login.password = try text.secure(item["notes"], "notes")
        case 3:
            login.kind = Array("credit card".utf8)
            let card = item["card"] ?? .null
            login.username = try text.bytes(card["cardholderName"], "card.cardholderName")
            login.password = try SecureLines.join(card, "card", text, ["cardholderName", "brand", "number", "expMonth", "expYear", "code"])
            if !notes.isEmpty { login.comment.append(notes) }
        case 4:
            login.kind = Array("identity".utf8)
            let identity = item["identity"] ?? .null
            login.username = try text.bytes(identity["username"], "identity.username")
            if login.username.isEmpty { login.username = try text.bytes(identity["email"], "identity.email") }
            login.password = try SecureLines.join(identity, "identity", text, [
                "title", "firstName", "middleName", "lastName", "address1", "address2", "address3", "city", "state",
                "postalCode", "country", "company", "email", "phone", "ssn", "username", "passportNumber", "licenseNumber",
            ])
            if !notes.isEmpty { login.comment.append(notes) }
        case 5:
            login.kind = Array("ssh key".utf8)
            let key = item["sshKey"] ?? .null
            login.password = try text.secure(key["privateKey"], "sshKey.privateKey")
            if !notes.isEmpty { login.comment.append(notes) }
            login.note("public key", try text.bytes(key["publicKey"], "sshKey.publicKey"))
            login.note("fingerprint", try text.bytes(key["keyFingerprint"], "sshKey.keyFingerprint"))
        default:
            return nil
        }
        for (n, field) in (item["fields"]?.array ?? []).enumerated() {
            let fieldName = try text.bytes(field["name"], "fields[\(n)].name")
            switch field["type"]?.int(in: input) {
            case 1:
                login.hidden.append((fieldName, try text.secure(field["value"], "fields[\(n)].value")))
            case 3:
                // A linked field points at the username or password: it has no value of its own.
                continue
            default:
                login.note(String(decoding: fieldName, as: UTF8.self), try text.shown(field["value"], "fields[\(n)].value"))
            }
        }
        if let folder = item["folderId"]?.bytes(in: input), let folderName = folders[String(decoding: folder, as: UTF8.self)] {
            login.note("folder", folderName)
        }
        return login
    }
}

/// `name: value` lines built in guarded memory, for entries whose every field is secret (cards, identities).
enum SecureLines {
    static func join(_ object: JSONValue, _ objectName: String, _ text: BitwardenText, _ keys: [String]) throws -> SecureBytes {
        var parts: [(name: [UInt8], value: SecureBytes)] = []
        for key in keys {
            let value = try text.secure(object[key], "\(objectName).\(key)")
            guard value.count > 0 else { continue }
            parts.append((Array("\(key): ".utf8), value))
        }
        let total = parts.reduce(0) { $0 + $1.name.count + $1.value.count + 1 }
        let out = try SecureBytes(count: max(0, total - 1))
        out.withUnsafeMutableBytes { o in
            var k = 0
            for (i, part) in parts.enumerated() {
                if i > 0 { o[k] = 0x0a; k += 1 }
                for b in part.name { o[k] = b; k += 1 }
                part.value.withUnsafeBytes { v in for b in v { o[k] = b; k += 1 } }
            }
        }
        return out
    }
}
