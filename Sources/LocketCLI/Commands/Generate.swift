import LocketCore

extension Commands {
    /// `locket generate [--length N] [--charset SET] [-n]`
    static func generate(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        var length = PasswordGenerator.defaultLength
        if let text = invocation.value("length") { length = try generatedLength(text, option: "--length", command: "generate") }
        let secret = try PasswordGenerator.generate(length: length, charset: try charset(invocation, command: "generate"))
        printSecret(secret, context, newline: !invocation.has("no-newline"))
        return 0
    }

    /// The length of `--length N` or `--generate=N`; out of range is a usage error.
    static func generatedLength(_ text: String, option: String, command: String) throws -> Int {
        let range = PasswordGenerator.lengths
        guard let n = Int(text), range.contains(n) else {
            throw UsageError(message: "\(option) must be a number of characters from \(range.lowerBound) to \(range.upperBound)", command: command)
        }
        return n
    }

    /// `--charset SET`, alnum when not given.
    static func charset(_ invocation: Invocation, command: String) throws -> PasswordGenerator.Charset {
        guard let name = invocation.value("charset") else { return .alnum }
        guard let charset = PasswordGenerator.Charset(rawValue: name) else {
            let names = PasswordGenerator.Charset.allCases.map(\.rawValue).joined(with: ", ")
            throw UsageError(message: "--charset must be one of \(names), not '\(name.prefix(40))'", command: command)
        }
        return charset
    }

    /// Writes a generated secret: alone with a newline, or `{"data": ...}` with --json.
    static func printSecret(_ secret: SecureBytes, _ context: Context, newline: Bool) {
        if context.json {
            var w = JSONWriter()
            w.reserve(secret.count * 2 + 16)
            w.beginObject()
            w.key("data")
            secret.withUnsafeBytes { w.string(utf8: $0) }
            w.endObject()
            context.out.bytes(w.bytes)
            context.out.text("\n")
            w.reset()
            return
        }
        secret.withUnsafeBytes { context.out.raw($0) }
        if newline { context.out.text("\n") }
    }
}
