/// Asks for the passphrase once per file and keeps the answer for the
/// file's other encrypted blocks.
final class PassphraseCache {
    private let ask: () throws -> SecureBytes
    private var answer: SecureBytes?

    init(_ ask: @escaping () throws -> SecureBytes) { self.ask = ask }

    func get() throws -> SecureBytes {
        if let answer { return answer }
        let given = try ask()
        answer = given
        return given
    }
}
