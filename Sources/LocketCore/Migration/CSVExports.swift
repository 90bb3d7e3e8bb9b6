import LocketSupport

/// KeePassXC's CSV export (`keepassxc-cli export --format csv`, or the
/// application's Export to CSV): the header
/// `"Group","Title","Username","Password","URL","Notes","TOTP","Icon","Last Modified","Created"`.
enum KeePassXCCSV {
    static func read(_ input: SecureBytes, _ emit: (MigrationEntry) throws -> Void) throws {
        let table = try CSVTable(input, format: "KeePassXC CSV", required: [["password"], ["title"]],
                                 known: [["group"], ["username"], ["url"], ["notes"], ["totp"], ["last modified"], ["created"]])
        try CSVExports.readLogins(table, totpColumn: "totp", emit) { row, login in
            login.urls = [table.bytes(row, "url")].filter { !$0.isEmpty }
            // The first group is the database's root ("Root", "Passwords"): only the path below it says anything.
            let group = table.bytes(row, "group")
            if let slash = group.firstIndex(of: UInt8(ascii: "/")) { login.note("group", Array(group[(slash + 1)...])) }
            login.created = ISO8601.milliseconds(table.bytes(row, "created"))
            login.modified = ISO8601.milliseconds(table.bytes(row, "last modified"))
        }
    }
}

/// 1Password 8's CSV export: `Title,Url,Username,Password,OTPAuth,Favorite,Archived,Tags,Notes`
/// (only Login and Password items; columns found by name, older spellings accepted).
enum OnePasswordCSV {
    static func read(_ input: SecureBytes, _ emit: (MigrationEntry) throws -> Void) throws {
        let table = try CSVTable(input, format: "1Password CSV",
                                 required: [["password", "login password"]],
                                 known: [["title", "name"], ["url", "urls", "website", "login url", "login_uri"],
                                         ["username", "login username"], ["otpauth", "one-time password", "otp"],
                                         ["notes", "notesplain", "note"], ["tags"], ["archived"], ["favorite"], ["type"]])
        try CSVExports.readLogins(table, totpColumn: "otpauth", emit) { row, login in
            // Several websites in one cell come one per line (a comma may be part of a URL).
            login.urls = table.bytes(row, "url").split(whereSeparator: { $0 == 0x0a || $0 == 0x0d })
                .map { Array($0) }.filter { !$0.isEmpty }
            login.note("tags", table.bytes(row, "tags"))
            login.note("type", table.bytes(row, "type"))
            if String(decoding: table.bytes(row, "archived"), as: UTF8.self).lowercased() == "true" { login.note("archived", Array("true".utf8)) }
        }
    }
}

enum CSVExports {
    /// `row N 'Title'`: rows counted as records, the header being row 1.
    static func origin(_ row: CSV.Row, _ title: [UInt8]) -> String {
        let name = String(decoding: title, as: UTF8.self)
        return name.isEmpty ? "row \(row.number)" : "row \(row.number) '\(Printable.clip(name, max: 40))'"
    }

    /// Each row of `table` as a login. Title, username, password, the
    /// one-time code in `totpColumn` and the notes are read alike in every
    /// export; `fill` reads the rest. A row that can't be read is skipped, named.
    static func readLogins(_ table: CSVTable, totpColumn: String, _ emit: (MigrationEntry) throws -> Void,
                           fill: (CSV.Row, inout Login) -> Void) throws {
        for row in table.rows {
            let title = table.bytes(row, "title")
            let origin = origin(row, title)
            if let problem = table.problem(row) {
                try emit(.skipped(MigrationSkip(origin: origin, reason: problem)))
                continue
            }
            var login = Login(origin: origin)
            login.title = title
            login.username = table.bytes(row, "username")
            login.password = try table.secure(row, "password")
            let totp = try table.secure(row, totpColumn)
            login.totp = totp.count > 0 ? totp : nil
            let notes = table.bytes(row, "notes")
            if !notes.isEmpty { login.comment.append(notes) }
            fill(row, &login)
            for entry in try login.entries() { try emit(entry) }
        }
    }
}
