import Glibc
import LocketCore
import LocketLocator
import LocketTerminal

/// Whether this machine can prove the device owner's presence now, as the
/// Security module proves it (SPEC §14): the keychain password typed at the
/// controlling terminal, checked against the keychain the module uses
/// (LOCKET_KEYCHAIN, else login). Nil when it can; else the LAError code
/// and why. The module asks no askpass program: without a terminal it can't.
enum Presence {
    static func unavailable() -> (LAError.Code, String)? {
        guard let terminal = Terminal.openControlling() else {
            return (.notInteractive, "there is no controlling terminal to type the keychain password at")
        }
        close(terminal)
        let hasPassword: Bool
        do {
            let environment = Environment.process
            let location = try KeychainLocator.resolve(nil, environment: environment)
            let keychain = try Keychain.open(location, environment: environment, extendSession: false)
            hasPassword = keychain.hasPassword
            keychain.releaseFile()
        } catch {
            return (.passcodeNotSet, "the keychain could not be opened to prove presence with: \(error)")
        }
        guard hasPassword else { return (.passcodeNotSet, "the keychain has no password: there is nothing to prove presence with") }
        return nil
    }
}
