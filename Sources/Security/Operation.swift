import Glibc
import LocketCore
import LocketSupport
import LocketTerminal

/// Runs the engine's side of a Security function. First with the pool's
/// keychain, under its lock; when an item's access control asks for a proof
/// (SPEC §14), again with a keychain of this call's own, outside the lock so
/// that the process's other threads go on while the user types: the proof
/// is the context's application password (kSecUseAuthenticationContext) or
/// asked for at the controlling terminal (`TerminalProofs`, the command
/// line's own), and it is forgotten with that keychain when the call
/// returns, so every call proves again (unless `locket settings
/// --presence-reuse` says one proof serves the terminal for a while).
enum Operation {
    /// `body` with the keychain, and the pool's entry when it is the pool's
    /// (for searches answered from held rows, and forgetting them after a write).
    static func run<T>(_ authentication: Authentication, newItem: Bool = false, target: KeychainTarget? = nil,
                       _ body: (Keychain, OpenKeychain?) throws -> T) throws -> T {
        let target = try target ?? KeychainTarget.current()
        do {
            return try KeychainPool.shared.withKeychain(target) { entry in try body(entry.keychain, entry) }
        } catch let error as KeychainError {
            guard case .proofNeeded? = error.reason else { throw error }
        }
        let keychain = try KeychainPool.shared.openPrivate(target)
        if let password = authentication.applicationPassword { keychain.session.applicationPassword = try SecureBytes(copying: password) }
        var proofs: TerminalProofs?
        while true {
            do {
                return try body(keychain, nil)
            } catch let error as KeychainError {
                guard case .proofNeeded? = error.reason, authentication.mayAsk else { throw error }
                if proofs == nil {
                    proofs = TerminalProofs(reason: { reason(authentication.prompt, $0, newItem: newItem) },
                                            confirmsApplicationPassword: newItem,
                                            applicationPasswordGiven: authentication.applicationPassword != nil,
                                            beforePasswordPrompt: announceDelay)
                }
                try proofs!.supply(error, to: keychain)
            }
        }
    }

    /// The line above the keychain-password prompt: kSecUseOperationPrompt
    /// (or the context's localizedReason), else what the program is doing.
    private static func reason(_ prompt: String?, _ request: AccessRequest, newItem: Bool) -> String {
        if let prompt, !prompt.isEmpty { return Printable.escape(prompt, backslashes: false) }
        let program = Printable.escape(programName, backslashes: false)
        if newItem { return "\(program) needs the keychain password to set up user presence in this keychain" }
        let label = request.label.map { "\"\(Printable.escape($0, backslashes: false))\"" } ?? "an item"
        return "\(program) wants to use \(label), which needs user presence"
    }

    /// This process's name, as the kernel knows it.
    private static var programName: String {
        guard let comm = readSmallFile("/proc/self/comm", limit: 64), comm.count > 1 else { return "this program" }
        return String(decoding: comm.filter { $0 != 0x0a }, as: UTF8.self)
    }

    /// Before the password prompt: whenever the engine waits while it checks
    /// the password (another attempt's turn, the delay it makes wrong
    /// passwords wait, longer each time), say so at the terminal rather than
    /// seem to hang.
    private static func announceDelay(_ keychain: Keychain) {
        keychain.session.passwordWaitObserver = { wait in
            guard let terminal = Terminal.openControlling() else { return }
            defer { close(terminal) }
            switch wait {
            case .turn:
                Terminal.write(terminal, "another password attempt on this keychain is being checked; waiting for its turn\n")
            case .delay(let failures, let milliseconds):
                Terminal.write(terminal, "\(failures) wrong passwords in a row; waiting \((milliseconds + 999) / 1000) s before the next attempt\n")
            }
        }
    }
}
