import LocketCore
import LocketSupport
import LocketTerminal

/// The command line's half of access control (SPEC §14): the engine says
/// what proof an item needs (`.proofNeeded`); `TerminalProofs` (shared with
/// the Security module) asks for it at the controlling terminal (`/dev/tty`,
/// never stdin, which may carry the secret) and gives it to the engine, and
/// the operation runs again. Without a terminal the engine's
/// errSecInteractionNotAllowed stands: nothing waits. Here: the application
/// password from stdin, and the command line's words for why it asks.
enum AccessPrompt {
    /// Runs `body`, supplying proofs as the engine asks for them. Without an
    /// invocation (exec, inject, the credential helpers) there is no
    /// `--prompt` and no `--application-password-stdin`: the terminal only.
    @discardableResult
    static func run<T>(_ keychain: Keychain, _ invocation: Invocation?, _ context: Context, _ body: () throws -> T) throws -> T {
        let fromStdin = invocation?.has("application-password-stdin") == true
        if fromStdin {
            // Standard input may be a slow producer: wait without the keychain's
            // file (add from a regular --data-file still holds it here).
            context.releaseKeychainFile()
            let password = try Prompt.readLine(context.io.stdin)
            guard password.count > 0 else {
                throw KeychainError(.param, "no application password on the first line of standard input")
            }
            keychain.session.applicationPassword = password
        }
        // Made at the first proof asked for: a read of an item without access control pays nothing.
        var proofs: TerminalProofs?
        while true {
            do {
                return try body()
            } catch let error as KeychainError {
                guard case .proofNeeded? = error.reason else { throw error }
                if proofs == nil {
                    proofs = TerminalProofs(reason: { reason(invocation, context, $0) },
                                            confirmsApplicationPassword: invocation?.has("access-control") == true,
                                            applicationPasswordGiven: fromStdin,
                                            beforePasswordPrompt: { Commands.announcePasswordWaits($0, context) })
                }
                try proofs!.supply(error, to: keychain)
            }
        }
    }

    /// Refuses two readers of standard input: the application password and the secret.
    static func checkStdin(_ invocation: Invocation, command: String) throws {
        guard invocation.has("application-password-stdin") else { return }
        if invocation.value("data-file") == "-" || (invocation.has("password") && invocation.isBare("password")) {
            throw UsageError(message: "--application-password-stdin reads standard input; give the secret with --data-file PATH", command: command)
        }
    }

    /// The line above the password prompt: `--prompt TEXT` (kSecUseOperationPrompt) or what is being done.
    private static func reason(_ invocation: Invocation?, _ context: Context, _ request: AccessRequest) -> String {
        if let text = invocation?.value("prompt") { return Printable.escape(text, backslashes: false) }
        let label = request.label.map { "\"\(Printable.escape($0, backslashes: false))\"" } ?? "an item"
        let command = "locket " + (context.commandName ?? "")
        if invocation?.has("access-control") == true {
            return "\(command) needs the keychain password to set up user presence in this keychain"
        }
        if invocation?.has("presence-reuse") == true {
            return "\(command) needs the keychain password to lengthen the presence reuse window"
        }
        let verb = ["update": " wants to change ", "key": " wants to use ", "export": " wants to export "][context.commandName ?? ""] ?? " wants to read "
        return command + verb + "\(label), which needs user presence"
    }
}
