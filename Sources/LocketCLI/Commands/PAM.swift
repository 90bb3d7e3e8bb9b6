import Glibc
import LocketCore
import LocketSupport

/// `locket pam unlock | passwd | lock` (SPEC §20): what pam_locket.so runs,
/// as the user, at login, at a password change and at logout. The module
/// is small C inside sshd, gdm and login; every decision about the keychain
/// is made here, in the user's own process. Passwords come on stdin, a line
/// each; what happened is one line on stdout (the module logs it), a
/// failure the usual error on stderr. Nothing here ever prompts.
///
/// A login password that did not open the keychain is remembered by the
/// keychain's password stamp (`login-refused` in the state directory), so
/// later logins do not try it again until either password changes: each
/// attempt would count as a wrong password and, five logins later, make
/// every unlock of the keychain wait.
extension Commands {
    static let pamSpec = CommandSpec(
        name: "pam", usage: "unlock [--timeout SECONDS|none] | passwd | lock",
        summary: "what pam_locket.so runs as the user: unlock (or make) the login keychain with the login password, change its password with it, lock at logout",
        options: [OptionSpec("timeout", nil, .value("SECONDS"), completion: .values { ["none", "300", "3600"] },
                             "unlock: the auto-lock timeout (none: until locked; default: the keychain's setting)")],
        conflicts: [], operands: false, run: pam, subcommands: ["unlock", "passwd", "lock"])

    static func pam(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        Diagnostics.protectProcess()
        guard let verb = invocation.subcommand else {
            throw UsageError(message: "pam needs one of unlock, passwd or lock", command: "pam")
        }
        if invocation.has("timeout") && verb != "unlock" {
            throw UsageError(message: "--timeout is for pam unlock", command: "pam")
        }
        switch verb {
        case "unlock": return try pamUnlock(invocation, context)
        case "passwd": return try pamPasswd(context)
        default: return try pamLock(context)
        }
    }

    /// Unlocks the login keychain with the password on stdin; makes it with
    /// that password when there is none and locket is this user's Secret
    /// Service (`secret-service enable`: the user chose locket's keyring).
    static func pamUnlock(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        let timeout = try invocation.value("timeout").map { try parseTimeout($0, command: "pam") }
        let path = try loginKeychainPath(context)
        let password = try Prompt.readLine(context.io.stdin)
        guard password.count > 0 else { throw KeychainError(.param, "no password on standard input") }
        guard OutputFile.exists(path) else {
            guard ProviderActivation.isEnabled(environment: context.environment) else {
                context.out.line("no keychain at \(path): nothing to unlock (locket init makes one; after 'locket secret-service enable' the next login makes it)")
                return 0
            }
            let cost = context.io.defaultKDF ?? KDFLevel.moderate.cost
            try Keychain.create(at: path, password: password, kdf: cost, environment: context.environment, sessionTimeout: timeout)
            context.out.line("made the login keychain \(path) with the login password; unlocked")
            return 0
        }
        let keychain = try context.openKeychain()
        guard keychain.hasPassword else {
            context.out.line("\(path) has no password: it is always unlocked")
            return 0
        }
        if keychain.session.isUnlocked, try keychain.session.status().scopedGroups == nil {
            context.out.line("\(path) is already unlocked")
            return 0
        }
        try LoginRefusals.check(keychain, context)
        do {
            try keychain.session.unlock(password: password, timeout: timeout)
        } catch let error as KeychainError where error.code == .authFailed {
            try LoginRefusals.record(keychain, context)
            throw error.with(detail: "the login password does not open \(path): it stays locked").with(hint: LoginRefusals.hint)
        }
        LoginRefusals.forget(keychain, context)
        context.out.line("unlocked \(path)")
        return 0
    }

    /// Changes the login keychain's password from the old login password to
    /// the new one (two lines on stdin), in one transaction; nothing when the
    /// old one does not open it.
    static func pamPasswd(_ context: Context) throws -> Int32 {
        let path = try loginKeychainPath(context)
        let old = try Prompt.readLine(context.io.stdin)
        let new = try Prompt.readLine(context.io.stdin)
        guard old.count > 0, new.count > 0 else { throw KeychainError(.param, "pam passwd needs the old and the new password, a line each") }
        guard OutputFile.exists(path) else {
            context.out.line("no keychain at \(path): no password to change")
            return 0
        }
        let keychain = try context.openKeychain()
        guard keychain.hasPassword else {
            context.out.line("\(path) has no password: it is left without one")
            return 0
        }
        try LoginRefusals.check(keychain, context)
        // The cost stays the keychain's, never below INTERACTIVE (as passwd).
        let cost = context.io.defaultKDF ?? keychain.session.kdfCost?.atLeast(.interactive) ?? KDFLevel.moderate.cost
        do {
            try keychain.session.changePassword(old: old, new: new, kdf: cost)
        } catch let error as KeychainError where error.code == .authFailed {
            try LoginRefusals.record(keychain, context)
            throw error.with(detail: "the old login password does not open \(path): its password is left as it is").with(hint: LoginRefusals.hint)
        }
        context.out.line("\(path) now has the new login password")
        return 0
    }

    /// The login keychain (the default one, or -k): a file, since the Secret Service serves files.
    static func loginKeychainPath(_ context: Context) throws -> String {
        let location = try context.keychainLocation()
        guard let path = location.filePath else { throw KeychainError(.notAvailable, "the login's keychain is a file, not \(location.description)") }
        return path
    }

    /// Locks every keychain in `$XDG_DATA_HOME/locket` (their when-unlocked keys, as `lock`).
    static func pamLock(_ context: Context) throws -> Int32 {
        let directory = try context.environment.dataDirectory()
        var locked: [String] = []
        var failure: KeychainError?
        for name in keychainNames(in: directory) {
            let path = directory + "/" + name
            do {
                let keychain = try Keychain.open(at: path, environment: context.environment, extendSession: false, acceptRollback: true)
                if keychain.hasPassword {
                    keychain.session.lock(all: false)
                    locked.append(name)
                }
            } catch let error as KeychainError {
                context.err("locket: error: \(path): \(error.description)")
                failure = failure ?? error
            }
        }
        context.out.line(locked.isEmpty ? "no keychain with a password in \(directory): nothing to lock" : "locked \(locked.joined(with: ", "))")
        return failure.map { Diagnostics.exitStatus($0) } ?? 0
    }

    /// The `*.keychain` files of a directory, sorted.
    static func keychainNames(in directory: String) -> [String] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name.hasSuffix(".keychain") && !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted()
    }
}

/// The login passwords that did not open a keychain, by the keychain's
/// password stamp: `$XDG_STATE_HOME/locket/login-refused`, one stamp a line.
/// A stamp changes with the keychain's password, so `locket passwd` (or a
/// login password change that opened it) ends the refusal.
enum LoginRefusals {
    static let hint = "make the keychain's password the login password with 'locket passwd', and the next login unlocks it"

    static func path(_ context: Context) throws -> String { try context.environment.stateDirectory() + "/locket/login-refused" }

    static func stamps(_ context: Context) -> [String] {
        guard let path = try? path(context), let bytes = readSmallFile(path, limit: 1 << 16) else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Refuses (errSecAuthFailed, not counted) a password this stamp already refused.
    static func check(_ keychain: Keychain, _ context: Context) throws {
        guard let stamp = keychain.session.passwordStamp, stamps(context).contains(stamp) else { return }
        throw KeychainError(.authFailed, "not tried: the login password did not open \(keychain.path) at an earlier login, and neither password has changed since",
                            hint: hint)
    }

    static func record(_ keychain: Keychain, _ context: Context) throws {
        guard let stamp = keychain.session.passwordStamp else { return }
        let id = stamp.split(separator: ".").first.map(String.init) ?? stamp
        let kept = stamps(context).filter { !$0.hasPrefix(id + ".") } + [stamp]
        try save(kept, context)
    }

    static func forget(_ keychain: Keychain, _ context: Context) {
        guard let stamp = keychain.session.passwordStamp, let id = stamp.split(separator: ".").first else { return }
        let all = stamps(context)
        let kept = all.filter { !$0.hasPrefix(id + ".") }
        if kept.count != all.count { try? save(kept, context) }
    }

    private static func save(_ stamps: [String], _ context: Context) throws {
        let path = try path(context)
        let directory = String(path[..<path.lastIndex(of: "/")!])
        if !OutputFile.exists(directory) { mkdir(directory, 0o700) }
        let text = stamps.map { $0 + "\n" }.joined(with: "")
        try Array(text.utf8).withUnsafeBytes { try OutputFile.write(path, $0, replace: true) }
    }
}
