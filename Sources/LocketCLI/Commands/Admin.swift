import Glibc
import LocketCore
import LocketSupport

extension Commands {
    /// `locket passwd`
    static func passwd(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        let keychain = try context.openKeychain()
        // Before any prompt: a remote keychain's password is not changed here.
        try keychain.require(.changePassword)
        let fromStdin = false
        var old: SecureBytes?
        if keychain.hasPassword {
            announcePasswordWaits(keychain, context)
            old = try Prompt.password(context, prompt: "Current password for \(keychain.path): ", confirm: false, fromStdin: fromStdin)
        }
        if invocation.has("remove") {
            let doomed = keychain.session.passcodeItemCount
            if doomed > 0 && !invocation.has("yes") {
                guard Prompt.isTerminal(context.io.stdin) else {
                    throw KeychainError(.interactionNotAllowed,
                                        "removing the password deletes \(doomed) when-passcode-set item\(doomed == 1 ? "" : "s")",
                                        hint: "add --yes to confirm")
                }
                guard try Prompt.confirm(context, "Removing the password deletes \(doomed) when-passcode-set item\(doomed == 1 ? "" : "s"). Continue? [y/N] ") else {
                    throw KeychainError(.userCanceled)
                }
            }
            let removed = try keychain.session.changePassword(old: old, new: nil)
            if removed > 0 { context.warn("deleted \(removed) when-passcode-set item\(removed == 1 ? "" : "s")") }
            return 0
        }
        // Plain passwd keeps the keychain's cost, never below INTERACTIVE: the
        // command line writes no weaker parameters, whatever made the keychain.
        // (IO.defaultKDF comes before it only in-process, where a test sets it.)
        let cost = try invocation.value("kdf").map { try KDFLevel.parse($0, command: "passwd").cost }
            ?? context.io.defaultKDF ?? keychain.session.kdfCost?.atLeast(.interactive) ?? KDFLevel.moderate.cost
        let new = try Prompt.password(context, prompt: "New password for \(keychain.path): ", confirm: true, fromStdin: fromStdin)
        try keychain.session.changePassword(old: old, new: new, kdf: cost, rotate: invocation.has("rotate"))
        return 0
    }

    /// Says so on stderr whenever the engine, checking a password, waits:
    /// for another attempt's turn, or out the delay after repeated wrong
    /// passwords (the engine enforces both and decides them under the turn,
    /// so the line says what really happens, not what the count at open said).
    static func announcePasswordWaits(_ keychain: Keychain, _ context: Context) {
        let path = keychain.path
        keychain.session.passwordWaitObserver = { wait in
            switch wait {
            case .turn:
                context.warn("another password attempt on \(path) is being checked; waiting for its turn")
            case .delay(let failures, let milliseconds):
                context.warn("\(failures) wrong passwords in a row; waiting \((milliseconds + 999) / 1000) s before the next attempt")
            }
        }
    }

    /// `locket settings`
    static func settings(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        let lockEvents: [(String, KeychainSession.LockEvent)] = [("lock-on-sleep", .sleep), ("lock-on-screen-lock", .screenLock)]
        // Values are checked before the keychain is opened: a typo is a usage error, whatever the keychain.
        let newTimeout = try invocation.value("timeout").map { try parseTimeout($0, command: "settings") }
        let locks = try lockEvents.compactMap { option, event in
            try invocation.value(option).map { (event, try parseYesNo($0, option: option)) }
        }
        let binding = invocation.has("tpm") || invocation.has("no-tpm")
        if invocation.has("password-stdin") && !binding {
            throw UsageError(message: "--password-stdin goes with --tpm or --no-tpm", command: "settings")
        }
        let keychain = try context.openKeychain()
        if binding { try changeTPMBinding(keychain, bind: invocation.has("tpm"), invocation, context) }
        if invocation.has("timeout") || invocation.has("presence-reuse") || !locks.isEmpty {
            // First, so that a refusal (a longer window needs the password) changes nothing.
            if let text = invocation.value("presence-reuse") {
                guard let seconds = UInt32(text), seconds <= KeychainSession.maximumPresenceReuse else {
                    throw UsageError(message: "--presence-reuse needs 0 to \(KeychainSession.maximumPresenceReuse) seconds", command: "settings")
                }
                try AccessPrompt.run(keychain, invocation, context) { try keychain.session.setPresenceReuse(seconds) }
            }
            if let newTimeout { try keychain.session.setDefaultTimeout(newTimeout) }
            for (event, value) in locks { try keychain.session.setLocks(on: event, value) }
            return 0
        }
        if binding { return 0 }
        let timeout = keychain.session.defaultTimeout
        let reuse = keychain.session.presenceReuse
        if context.json {
            var w = JSONWriter()
            w.beginObject()
            w.key("timeout"); if timeout == 0 { w.string("none") } else { w.int(Int64(timeout)) }
            w.key("presenceReuse"); w.int(Int64(reuse))
            w.key("lockOnSleep"); w.bool(keychain.session.locks(on: .sleep))
            w.key("lockOnScreenLock"); w.bool(keychain.session.locks(on: .screenLock))
            w.endObject()
            context.out.bytes(w.bytes)
            context.out.text("\n")
        } else {
            context.out.line("timeout: \(timeout == 0 ? "none" : String(timeout))")
            if reuse > 0 { context.out.line("presence-reuse: \(reuse)") }
            // As presence-reuse, printed only when not the default.
            if !keychain.session.locks(on: .sleep) { context.out.line("lock-on-sleep: no") }
            if !keychain.session.locks(on: .screenLock) { context.out.line("lock-on-screen-lock: no") }
        }
        return 0
    }

    /// `settings --tpm` / `--no-tpm`: the keychain bound to this machine's
    /// TPM, or freed from it, with its password, in one transaction.
    private static func changeTPMBinding(_ keychain: Keychain, bind: Bool, _ invocation: Invocation, _ context: Context) throws {
        guard keychain.session.isTPMBound != bind else {
            context.warn(bind ? "the keychain is already bound to the TPM; nothing changed" : "the keychain is not bound to a TPM; nothing changed")
            return
        }
        // Before the password is asked: without a TPM there is nothing to bind to (or unseal with).
        _ = try TPMLocation.find(environment: context.environment)
        announcePasswordWaits(keychain, context)
        let password = try Prompt.password(context, prompt: "Password for \(keychain.path): ", confirm: false,
                                           fromStdin: invocation.has("password-stdin"))
        if bind { try keychain.session.bindToTPM(password: password) } else { try keychain.session.unbindFromTPM(password: password) }
    }

    static func parseYesNo(_ text: String, option: String) throws -> Bool {
        switch text {
        case "yes": return true
        case "no": return false
        default: throw UsageError(message: "--\(option) takes yes or no, not '\(Printable.clip(text))'", command: "settings")
        }
    }

    /// `locket status`
    static func status(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        let keychain = try context.openKeychain(extendSession: false)
        let s = try keychain.session.status()
        let tpm = try TPMStatus.read(context, probe: invocation.has("tpm"))
        let timeout = s.autoLockTimeout == 0 ? "none" : String(s.autoLockTimeout)
        if context.json {
            var w = JSONWriter()
            w.beginObject()
            w.key("keychain"); w.string(s.path)
            w.key("password"); w.bool(s.hasPassword)
            w.key("whenUnlocked"); w.string(s.whenUnlocked ? "unlocked" : "locked")
            w.key("afterFirstUnlock"); w.string(s.afterFirstUnlock ? "unlocked" : "locked")
            w.key("secondsUntilAutoLock")
            if let left = s.secondsUntilAutoLock { w.int(left) } else { w.null() }
            w.key("timeout"); if s.autoLockTimeout == 0 { w.string("none") } else { w.int(Int64(s.autoLockTimeout)) }
            w.key("session"); if let backend = s.sessionBackend { w.string(backend) } else { w.null() }
            w.key("failedAttempts"); w.int(Int64(s.failedAttempts))
            w.key("scopedTo")
            if let groups = s.scopedGroups {
                w.beginArray(); for group in groups { w.string(group) }; w.endArray()
            } else {
                w.null()
            }
            w.key("items"); w.beginObject()
            for pclass in ProtectionClass.allCases { w.key(pclass.name); w.int(Int64(s.itemCounts[pclass] ?? 0)) }
            w.endObject()
            w.key("tpmBound"); w.bool(s.tpmBound)
            w.key("tpm"); tpm.json(&w)
            w.endObject()
            context.out.bytes(w.bytes)
            context.out.text("\n")
            return 0
        }
        context.out.line("keychain: \(Printable.escape(s.path))")
        context.out.line("password: \(s.hasPassword ? "set" : "none (always unlocked)")")
        context.out.line("when-unlocked: \(s.whenUnlocked ? "unlocked" : "locked")")
        context.out.line("after-first-unlock: \(s.afterFirstUnlock ? "unlocked" : "locked")")
        if let left = s.secondsUntilAutoLock { context.out.line("auto-lock in: \(left) s") }
        context.out.line("auto-lock timeout: \(timeout)")
        if let backend = s.sessionBackend { context.out.line("session: \(backend)") }
        if s.failedAttempts > 0 { context.out.line("failed attempts: \(s.failedAttempts)") }
        if let groups = s.scopedGroups { context.out.line("session scoped to: \(groups.map { Printable.escape($0) }.joined(with: ", "))") }
        for pclass in ProtectionClass.allCases { context.out.line("items \(pclass.name): \(s.itemCounts[pclass] ?? 0)") }
        context.out.line("tpm-bound: \(s.tpmBound ? "yes" : "no")")
        for line in tpm.lines { context.out.line(line) }
        return 0
    }
}
