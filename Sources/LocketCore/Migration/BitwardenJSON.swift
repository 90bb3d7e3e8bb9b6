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
        for (k, item) in items.enumerated() {
            let title = item["name"]?.bytes(in: input) ?? []
            let name = String(decoding: title, as: UTF8.self)
            let origin = name.isEmpty ? "item \(k + 1)" : "item \(k + 1) '\(Printable.clip(name, max: 40))'"
            func skip(_ reason: String) throws { try emit(.skipped(MigrationSkip(origin: origin, reason: reason))) }
            guard case .object = item else { try skip("it is not an object"); continue }
            if let deleted = item["deletedDate"], !deleted.isNull { try skip("it is in Bitwarden's trash"); continue }
            var login = Login(origin: origin)
            login.title = title
            login.created = (item["creationDate"]?.bytes(in: input)).flatMap(ISO8601.milliseconds)
            login.modified = (item["revisionDate"]?.bytes(in: input)).flatMap(ISO8601.milliseconds)
            let notes = item["notes"]?.bytes(in: input) ?? []
            let type = item["type"]?.int(in: input)
            switch type {
            case 1:
                let body = item["login"] ?? .null
                login.username = body["username"]?.bytes(in: input) ?? []
                login.password = try body["password"]?.secure(in: input) ?? SecureBytes()
                let totp = try body["totp"]?.secure(in: input)
                login.totp = (totp?.count ?? 0) > 0 ? totp : nil
                login.urls = (body["uris"]?.array ?? []).map { $0["uri"]?.bytes(in: input) ?? [] }.filter { !$0.isEmpty }
                if !notes.isEmpty { login.comment.append(notes) }
            case 2:
                login.kind = Array("secure note".utf8)
                login.password = try item["notes"]?.secure(in: input) ?? SecureBytes()
            case 3:
                login.kind = Array("credit card".utf8)
                let card = item["card"] ?? .null
                login.username = card["cardholderName"]?.bytes(in: input) ?? []
                login.password = try SecureLines.join(card, input, ["cardholderName", "brand", "number", "expMonth", "expYear", "code"])
                if !notes.isEmpty { login.comment.append(notes) }
            case 4:
                login.kind = Array("identity".utf8)
                let identity = item["identity"] ?? .null
                login.username = identity["username"]?.bytes(in: input) ?? []
                if login.username.isEmpty { login.username = identity["email"]?.bytes(in: input) ?? [] }
                login.password = try SecureLines.join(identity, input, [
                    "title", "firstName", "middleName", "lastName", "address1", "address2", "address3", "city", "state",
                    "postalCode", "country", "company", "email", "phone", "ssn", "username", "passportNumber", "licenseNumber",
                ])
                if !notes.isEmpty { login.comment.append(notes) }
            case 5:
                login.kind = Array("ssh key".utf8)
                let key = item["sshKey"] ?? .null
                login.password = try key["privateKey"]?.secure(in: input) ?? SecureBytes()
                if !notes.isEmpty { login.comment.append(notes) }
                login.note("public key", key["publicKey"]?.bytes(in: input) ?? [])
                login.note("fingerprint", key["keyFingerprint"]?.bytes(in: input) ?? [])
            default:
                try skip(type.map { "its type \($0) is not one locket knows (1 login, 2 secure note, 3 card, 4 identity, 5 SSH key)" }
                         ?? "it has no type")
                continue
            }
            for field in item["fields"]?.array ?? [] {
                let fieldName = field["name"]?.bytes(in: input) ?? []
                switch field["type"]?.int(in: input) {
                case 1:
                    login.hidden.append((fieldName, try field["value"]?.secure(in: input) ?? SecureBytes()))
                case 3:
                    // A linked field points at the username or password: it has no value of its own.
                    continue
                default:
                    login.note(String(decoding: fieldName, as: UTF8.self), field["value"]?.bytes(in: input) ?? [])
                }
            }
            if let folder = item["folderId"]?.bytes(in: input), let folderName = folders[String(decoding: folder, as: UTF8.self)] {
                login.note("folder", folderName)
            }
            for entry in try login.entries() { try emit(entry) }
        }
    }
}

/// `name: value` lines built in guarded memory, for entries whose every field is secret (cards, identities).
enum SecureLines {
    static func join(_ object: JSONValue, _ input: SecureBytes, _ keys: [String]) throws -> SecureBytes {
        var parts: [(name: [UInt8], value: SecureBytes)] = []
        for key in keys {
            guard let value = try object[key]?.secure(in: input), value.count > 0 else { continue }
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
