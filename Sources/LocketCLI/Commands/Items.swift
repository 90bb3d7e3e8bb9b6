import LocketCore
import LocketSupport

/// The commands, one function each; `CommandTable` lists them.
enum Commands {
    /// `locket add`
    static func add(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        let itemClass = try AttributeOptions.itemClass(invocation)
        var item = NewItem(itemClass: itemClass)
        try AttributeOptions.given(invocation, itemClass) { attribute, value in
            if attribute == .accessGroup {
                item.accessGroup = String(decoding: value, as: UTF8.self)
            } else {
                try item.set(attribute, value)
            }
        }
        try AttributeOptions.freeForm(invocation, itemClass) { mapped, name, value in
            if let mapped { try item.set(mapped, try AttributeValue.parse(mapped, Array(value.utf8))) } else { item.freeForm.attributes[name] = value }
        }
        try item.freeForm.validate()
        if let accessible = invocation.value("accessible") { item.accessible = try ProtectionClass(parsing: accessible) }
        if invocation.has("synchronizable") { try item.set(.synchronizable, [0x31]) }
        if let control = invocation.value("access-control") {
            item.accessControl = try AccessControl(parsing: control)
            try AccessPrompt.checkStdin(invocation, command: "add")
        }
        if let pclass = item.accessible, pclass.tier == .always {
            context.warn("\(pclass.name) is deprecated, as in Apple's keychain: such items are readable without unlocking; prefer after-first-unlock")
        }
        var generate: (length: Int, charset: PasswordGenerator.Charset)?
        if let text = invocation.value("generate") {
            let length = text.isEmpty ? PasswordGenerator.defaultLength : try generatedLength(text, option: "--generate", command: "add")
            generate = (length, try charset(invocation, command: "add"))
        } else {
            for option in ["charset", "print"] where invocation.has(option) {
                throw UsageError(message: "--\(option) needs --generate", command: "add")
            }
        }
        let keychain = try context.openKeychain()
        if let generate {
            let secret = try PasswordGenerator.generate(length: generate.length, charset: generate.charset)
            try AccessPrompt.run(keychain, invocation, context) { try keychain.add(item, data: secret, updateExisting: invocation.has("update")) }
            // Printed only once it is stored, and only when asked: a generated
            // secret on a CI log is a leaked one.
            if invocation.has("print") { printSecret(secret, context, newline: true) }
            return 0
        }
        let data = try Prompt.secret(context, invocation, confirm: true) ?? SecureBytes()
        try AccessPrompt.run(keychain, invocation, context) { try keychain.add(item, data: data, updateExisting: invocation.has("update")) }
        return 0
    }

    /// `locket find`
    static func find(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        if AttributeOptions.isIdentity(invocation) { return try findIdentities(invocation, context) }
        let query = try AttributeOptions.query(invocation)
        let limit = try AttributeOptions.matchLimit(invocation)
        let secretOnly = invocation.has("password")
        let withData = secretOnly || invocation.has("show-data")
        let keychain = try context.openKeychain()
        // A key's or certificate's value is DER: binary, kept off a terminal as export keeps der; a
        // pipe or file gets the bytes. What the search would say (no such item, locked, a key that
        // never leaves) is said first, from the attributes: no proof is asked for either refusal.
        if secretOnly && !context.json && (query.itemClass == .key || query.itemClass == .certificate) && Prompt.isTerminal(1) {
            for item in try keychain.search(query, limit: limit) { try KeychainKeys.requireExtractable(item) }
            throw KeychainError(.param, "a \(query.itemClass.name)'s value is DER, binary, and is not written to a terminal",
                                hint: "redirect standard output, or print PEM with export --format pem --class \(query.itemClass == .key ? "keys" : "cert")")
        }
        let items = try AccessPrompt.run(keychain, invocation, context) { try keychain.search(query, limit: limit, returnData: withData) }
        let options = ItemPrinter.Options(data: withData, ref: invocation.has("show-ref"))
        let many = limit != .one
        if secretOnly && !context.json {
            for item in items {
                item.data?.withUnsafeBytes { context.out.raw($0) }
                if !invocation.has("no-newline") { context.out.text("\n") }
            }
            return 0
        }
        if context.json {
            var w = JSONWriter()
            if many { context.out.text("[") }
            for (i, item) in items.enumerated() {
                w.reset()
                ItemPrinter.json(item, options, into: &w)
                if i > 0 { context.out.text(",") }
                context.out.bytes(w.bytes)
            }
            if many { context.out.text("]") }
            context.out.text("\n")
        } else {
            var text = ByteWriter()
            for (i, item) in items.enumerated() {
                if i > 0 { context.out.text("\n") }
                ItemPrinter.text(item, options, into: &text)
                context.out.bytes(text.bytes)
                text.wipe()
            }
        }
        return 0
    }

    /// `locket update`
    static func update(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        if AttributeOptions.isIdentity(invocation) {
            throw KeychainError(.param, "an identity is a key and a certificate: update each with --class keys or --class cert")
        }
        let query = try AttributeOptions.query(invocation, accessibleIsATerm: false)
        var changes: [Attribute: [UInt8]] = [:]
        var newGroup: String?
        for assignment in invocation.all("set") {
            guard let eq = assignment.firstIndex(of: "=") else {
                throw UsageError(message: "--set needs NAME=VALUE, not '\(Printable.clip(assignment, max: 40))'", command: "update")
            }
            let name = String(assignment[..<eq])
            let text = String(assignment[assignment.index(after: eq)...])
            // The value types are the Security module's record of how values were given, not an attribute to set.
            guard let attribute = Attribute(name: name, for: query.itemClass), attribute != .valueTypes else {
                throw KeychainError(.noSuchAttr, "no attribute named '\(Printable.clip(name, max: 40))'")
            }
            guard query.itemClass.supports(attribute) else {
                throw KeychainError(.noSuchAttr, "\(query.itemClass.name) items have no \(attribute.longName) attribute (\(attribute.code))")
            }
            let value = try AttributeValue.parse(attribute, Array(text.utf8), for: query.itemClass)
            if attribute == .accessGroup { newGroup = text } else { changes[attribute] = value }
        }
        if let text = invocation.value("accessible") {
            let pclass = try ProtectionClass(parsing: text)
            if let set = changes[.accessible], try ProtectionClass(parsing: String(decoding: set, as: UTF8.self)) != pclass {
                throw UsageError(message: "--accessible and --set accessible= name two classes", command: "update")
            }
            changes[.accessible] = Array(pclass.rawValue.utf8)
        }
        let edit = try freeFormEdit(invocation, query.itemClass, changes: &changes)
        try AccessPrompt.checkStdin(invocation, command: "update")
        let keychain = try context.openKeychain()
        let data = try Prompt.secret(context, invocation, confirm: true)
        if changes.isEmpty && newGroup == nil && data == nil && edit.isEmpty {
            throw UsageError(message: "nothing to change: give --set NAME=VALUE, --set-attr NAME=VALUE, --remove-attr NAME, --accessible, -w or --data-file",
                             command: "update")
        }
        try AccessPrompt.run(keychain, invocation, context) {
            try keychain.update(query, changes: changes, accessGroup: newGroup, data: data, freeFormEdit: edit)
        }
        return 0
    }

    /// update's `--set-attr NAME=VALUE` and `--remove-attr NAME` (SPEC §18),
    /// named as `--attr` names them: `service` and `username` are the
    /// service and account (set, or emptied), every other name free-form.
    /// Set empty, `service` or `username` is kept present as the Secret
    /// Service keeps it (FreeFormMapping); removed or set, that record goes.
    private static func freeFormEdit(_ invocation: Invocation, _ itemClass: ItemClass,
                                     changes: inout [Attribute: [UInt8]]) throws -> FreeFormEdit {
        var edit = FreeFormEdit()
        let setting = invocation.all("set-attr")
        let removing = invocation.all("remove-attr")
        guard !setting.isEmpty || !removing.isEmpty else { return edit }
        guard itemClass == .genericPassword else {
            throw KeychainError(.noSuchAttr, "\(itemClass.name) items have no free-form attributes (--set-attr and --remove-attr are for generic passwords)")
        }
        func mapped(_ name: String, _ value: [UInt8], removed: Bool = false) throws -> Bool {
            guard let attribute = FreeFormMapping.attribute(named: name) else { return false }
            if changes[attribute] != nil {
                throw UsageError(message: "the \(attribute.longName) is changed twice (--set and --set-attr/--remove-attr \(name))", command: "update")
            }
            changes[attribute] = try AttributeValue.parse(attribute, value)
            if value.isEmpty && !removed { edit.setting[name] = "" } else { edit.removing.insert(name) }
            return true
        }
        for name in removing {
            guard !name.isEmpty else { throw UsageError(message: "--remove-attr takes a NAME", command: "update") }
            if try !mapped(name, [], removed: true) { edit.removing.insert(name) }
        }
        for text in setting {
            guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                throw UsageError(message: "--set-attr takes NAME=VALUE, not '\(Printable.clip(text))'", command: "update")
            }
            let name = String(text[..<equals])
            let value = String(text[text.index(after: equals)...])
            if edit.setting[name] != nil || edit.removing.contains(name) {
                throw UsageError(message: "the free-form attribute '\(Printable.clip(name))' is given twice", command: "update")
            }
            if try !mapped(name, Array(value.utf8)) { edit.setting[name] = value }
        }
        return edit
    }

    /// `locket delete`
    static func delete(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        if AttributeOptions.isIdentity(invocation) { return try deleteIdentities(invocation, context) }
        let query = try AttributeOptions.query(invocation)
        // An empty query would delete every item: demand --all.
        if query.isEmpty && !invocation.has("all") {
            throw KeychainError(.param, "delete without attributes would delete every item", hint: "add --all if that is what you mean")
        }
        let keychain = try context.openKeychain()
        try keychain.delete(query)
        return 0
    }

    /// `locket dump`
    static func dump(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        if AttributeOptions.isIdentity(invocation) { throw KeychainError(.param, "dump lists stored items; for identities use find --class identity --all") }
        let only = try invocation.value("class").map { try ItemClass(parsing: $0) }
        let keychain = try context.openKeychain()
        let options = ItemPrinter.Options(data: invocation.has("data"), ref: true, status: context.json)
        var first = true
        var damaged = 0
        var w = JSONWriter()
        var text = ByteWriter()
        defer { text.wipe() }
        try keychain.dump(returnData: options.data) { item in
            if let only, item.itemClass != only { return }
            if item.availability == .damaged { damaged += 1 }
            if context.json {
                w.reset()
                ItemPrinter.json(item, options, into: &w)
                // The bracket waits for the first item, so a dump that fails up front prints nothing on stdout.
                context.out.text(first ? "[\n" : ",\n")
                context.out.bytes(w.bytes)
            } else {
                if !first { context.out.text("\n") }
                ItemPrinter.text(item, options, into: &text)
                context.out.bytes(text.bytes)
                text.wipe()
            }
            first = false
        }
        if context.json { context.out.text(first ? "[]\n" : "\n]\n") }
        if damaged > 0 {
            throw KeychainError(.decode, "\(damaged) item\(damaged == 1 ? "" : "s") could not be opened (altered or moved); the others were listed")
        }
        return 0
    }
}
