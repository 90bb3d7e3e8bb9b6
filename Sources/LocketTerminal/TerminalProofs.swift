import Glibc
import LocketCore
import LocketSupport

/// The proofs an item's access control asks for (SPEC §14), asked at the
/// controlling terminal, for every caller that runs the engine in-process:
/// the command line and the Security module. The engine never asks: a read
/// without its proof fails with errSecInteractionNotAllowed and reason
/// `.proofNeeded`; `supply` asks for what it names, gives it to the keychain,
/// and the caller runs the operation again. Without a terminal, or when the
/// same proof is asked for twice, the engine's error stands: nothing waits.
///
/// One object per operation: it remembers what it has asked, and closes the
/// terminal when it goes.
public final class TerminalProofs {
    /// The line above the keychain-password prompt, already printable: why it is asked.
    private let reason: (AccessRequest) -> String
    /// A new item's application password is typed twice, as a new password is.
    private let confirmsApplicationPassword: Bool
    /// The caller gave the application password itself: never asked here.
    private let applicationPasswordGiven: Bool
    /// Runs before the keychain password is asked (the command line warns of
    /// the wrong-password delay there).
    private let beforePasswordPrompt: (Keychain) -> Void
    private var terminal: Int32?
    private var askedPassword = false, askedApplication = false, triedReuse = false

    public init(reason: @escaping (AccessRequest) -> String, confirmsApplicationPassword: Bool, applicationPasswordGiven: Bool,
                beforePasswordPrompt: @escaping (Keychain) -> Void) {
        self.reason = reason
        self.confirmsApplicationPassword = confirmsApplicationPassword
        self.applicationPasswordGiven = applicationPasswordGiven
        self.beforePasswordPrompt = beforePasswordPrompt
    }

    deinit { if let terminal { close(terminal) } }

    /// Supplies to `keychain` the proof `error` asks for, asking at the
    /// terminal; returns when the operation should run again. Rethrows
    /// `error` when it asks for no proof, when there is no terminal, or when
    /// it asks again for what was given (the engine would only ask forever).
    public func supply(_ error: KeychainError, to keychain: Keychain) throws {
        guard case .proofNeeded(let request)? = error.reason else { throw error }
        if terminal == nil { terminal = Terminal.openControlling() }
        guard let terminal else { throw error }
        // A proof given moments ago at this terminal may still serve (settings --presence-reuse).
        if request.keychainPassword && !triedReuse && keychain.session.presenceReuse > 0 {
            triedReuse = true
            keychain.session.terminalSession = Terminal.session(terminal)
            if keychain.session.terminalSession != nil { return }
        }
        if (request.keychainPassword && askedPassword) || (request.applicationPassword && (askedApplication || applicationPasswordGiven)) {
            throw error
        }
        if request.keychainPassword {
            askedPassword = true
            beforePasswordPrompt(keychain)
            let password = try Terminal.readPassword(terminal, output: terminal, escapedPrompt: reason(request)
                                                        + "\nKeychain password for " + Printable.escape(keychain.path, backslashes: false) + ": ")
            keychain.session.terminalSession = keychain.session.terminalSession ?? Terminal.session(terminal)
            try keychain.session.provePresence(password: password)
        }
        if request.applicationPassword {
            askedApplication = true
            let name = request.label.map { " for \"\(Printable.escape($0, backslashes: false))\"" } ?? ""
            let password = try Terminal.readPassword(terminal, output: terminal, escapedPrompt: "Application password\(name): ")
            if confirmsApplicationPassword {
                let again = try Terminal.readPassword(terminal, output: terminal, escapedPrompt: "Again: ")
                guard password.constantTimeEquals(again) else { throw KeychainError(.param, "the two application passwords do not match") }
            }
            keychain.session.applicationPassword = password
        }
    }
}
