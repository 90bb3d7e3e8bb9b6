import Glibc
import LocketCore
import LocketSupport

/// The command line's half of access control (SPEC §14): the engine says
/// what proof an item needs (`.proofNeeded`); this asks for it at the
/// controlling terminal (`/dev/tty`, never stdin, which may carry the
/// secret), gives it to the engine and runs the operation again. Without a
/// terminal the engine's errSecInteractionNotAllowed stands: nothing waits.
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
            keychain.applicationPassword = password
        }
        var askedPassword = false, askedApplication = false, triedReuse = false
        var terminal: Int32 = -1
        defer { if terminal >= 0 { close(terminal) } }
        while true {
            let request: AccessRequest
            do {
                return try body()
            } catch let error as KeychainError {
                guard case .proofNeeded(let asked)? = error.reason else { throw error }
                request = asked
                if terminal < 0 { terminal = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC) }
                // No controlling terminal (a CI job, a service): the engine's error stands.
                guard terminal >= 0 else { throw error }
                // A proof given moments ago at this terminal may still serve (settings --presence-reuse).
                if request.keychainPassword && !triedReuse && keychain.presenceReuse > 0 {
                    triedReuse = true
                    keychain.terminalSession = terminalSession(terminal)
                    if keychain.terminalSession != nil { continue }
                }
                // Asked again for what was given: the engine would only ask forever.
                if (request.keychainPassword && askedPassword) || (request.applicationPassword && (askedApplication || fromStdin)) {
                    throw error
                }
            }
            if request.keychainPassword {
                askedPassword = true
                Commands.announcePasswordDelay(keychain, context)
                let password = try Prompt.readTerminal(terminal, output: terminal,
                                                       escapedPrompt: reason(invocation, context, request) + "\nKeychain password for "
                                                           + Printable.escape(keychain.path, backslashes: false) + ": ")
                keychain.terminalSession = keychain.terminalSession ?? terminalSession(terminal)
                try keychain.provePresence(password: password)
            }
            if request.applicationPassword {
                askedApplication = true
                let name = request.label.map { " for \"\(Printable.escape($0, backslashes: false))\"" } ?? ""
                let prompt = "Application password\(name): "
                let password = try Prompt.readTerminal(terminal, output: terminal, escapedPrompt: prompt)
                // A new item (add, import, key generate with --access-control): typed twice, as a new password is.
                if invocation?.has("access-control") == true {
                    let again = try Prompt.readTerminal(terminal, output: terminal, escapedPrompt: "Again: ")
                    guard password.constantTimeEquals(again) else { throw KeychainError(.param, "the two application passwords do not match") }
                }
                keychain.applicationPassword = password
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

    /// Who "this terminal session" is, for the reuse window: the terminal
    /// device, the session id and its leader's start time (a recycled session
    /// id or a terminal reopened by another login is another session), as
    /// sudo tells its tty tickets apart. nil when any is unknown.
    static func terminalSession(_ terminal: Int32) -> String? {
        var st = stat()
        guard fstat(terminal, &st) == 0, st.st_mode & S_IFMT == S_IFCHR else { return nil }
        let sid = getsid(0)
        guard sid > 0, let stat = procFile("/proc/\(sid)/stat"), let close = stat.lastIndex(of: UInt8(ascii: ")")),
              close + 2 < stat.count else { return nil }
        // Field 22 (starttime) counts from the field after the command name in parentheses (field 3).
        let fields = stat[(close + 2)...].split(separator: UInt8(ascii: " "))
        guard fields.count > 19 else { return nil }
        return "\(st.st_rdev):\(sid):\(String(decoding: fields[19], as: UTF8.self))"
    }

    /// A small file of /proc, whole; nil when unreadable.
    private static func procFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        return n > 0 ? Array(buffer[..<n]) : nil
    }
}
