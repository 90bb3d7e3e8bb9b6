import LocketCLI
import LocketCore
import LocketLocator
import LocketRemote
import LocketSupport

extension KeychainCommand {
    /// `locket keychain recover` (issue 42): a device that refuses its remote
    /// keychain because the server lost what it had acknowledged (a failover,
    /// a restore of the database) is told what was lost, asked to agree (or
    /// `--yes`), then pinned to the server's history with every revocation it
    /// kept carried over and re-applied where it can; it says what to redo.
    static func recover(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        Diagnostics.protectProcess()
        // Accepting another history is the owner's act, as restore --accept-rollback is.
        if try context.caller() != .owner {
            throw KeychainError(.missingEntitlement, "recovering a remote keychain is for its owner, not an app with entitlements")
        }
        let location = try KeychainLocator.resolve(context.globals.keychain, environment: context.environment)
        guard let keychain = try Keychain.openForRecovery(location, environment: context.environment) else {
            throw RemoteAdmin.refusal(.recover)
        }
        let remote = try keychain.remote(for: .recover)
        let plan = try remote.recoveryPlan()
        guard plan.isNeeded else {
            if context.json {
                writeRecoveryJSON(plan, needed: false, context)
            } else {
                context.out.line("nothing to recover: \(plan.url) holds everything this device saw (\(plan.serverView))")
            }
            return 0
        }
        // What was lost, before anything is asked: on stdout, or with --json on stderr (the object comes at the end).
        for line in describe(plan) {
            if context.json { context.err(line) } else { context.out.line(line) }
        }
        context.out.flush()
        if !invocation.has("yes") {
            guard Prompt.isTerminal(context.io.stdin) && !invocation.has("password-stdin") else {
                throw KeychainError(.interactionNotAllowed, "recover changes what this device trusts only once agreed to",
                                    hint: "read what was lost above, then add --yes to go ahead")
            }
            guard try Prompt.confirm(context, "Trust what \(plan.url) holds now, and redo what was lost? [y/N] ") else {
                throw KeychainError(.userCanceled)
            }
        }
        let password = try Prompt.password(context, prompt: "Password for \(plan.url): ", confirm: false,
                                           fromStdin: invocation.has("password-stdin"))
        let done = try remote.recover(password: password)
        if context.json {
            writeRecoveryJSON(done, needed: true, context)
        } else {
            context.out.line("recovered: this device now trusts the history \(done.url) holds, from \(done.serverView) on")
            for revocation in done.revocations {
                switch revocation.outcome {
                case .reapplied(let epoch):
                    context.out.line(revocation.staleGroups.isEmpty
                                     ? "device \(revocation.device) revoked again (membership epoch \(epoch))"
                                     : "group\(revocation.staleGroups.count == 1 ? "" : "s") \(list(revocation.staleGroups)) given a new key (epoch \(epoch)): device \(revocation.device), revoked in the lost history, held it")
                case .failed(let why):
                    context.out.line("device \(revocation.device)'s revocation could not be re-applied here: \(why)")
                case .pending:
                    break
                }
            }
        }
        if let failed = done.revocations.first(where: { if case .failed = $0.outcome { return true } else { return false } }) {
            throw KeychainError(.decode, """
                device \(failed.device) is approved again in what \(done.url) holds, and this device refuses the keychain until it is revoked again
                """, reason: .revocationLost(device: failed.device))
        }
        return 0
    }

    /// The plan, in words: what the server no longer holds, and what to redo.
    private static func describe(_ plan: RemoteAdmin.Recovery) -> [String] {
        var lines: [String] = []
        lines.append("\(plan.url) no longer holds everything this device saw (a failover that lost acknowledged writes, or a restore of the database):")
        if let damage = plan.trustDamage {
            lines.append("  this device's trust record could not be read (\(damage)): it starts again from the server's history, as at enrolment, and knows no revocation it saw")
        }
        if let kept = plan.keptView { lines.append("  this device saw \(kept); the server shows \(plan.serverView)") }
        func by(_ signer: Int64) -> String { signer == plan.device ? "this device" : "device \(signer)" }
        for link in plan.lostMembership {
            lines.append("  lost membership epoch \(link.number), signed by \(by(link.signer))\(link.changes.isEmpty ? "" : ": " + link.changes.joined(separator: ", "))")
        }
        for link in plan.lostStates {
            var line = "  lost state \(link.number) of the items, written by \(by(link.signer))"
            if !link.items.isEmpty {
                line += ": items " + link.items.map { Hex.encode($0) }.joined(separator: " ") + (link.moreItems > 0 ? " and \(link.moreItems) more" : "")
            }
            lines.append(line)
        }
        if plan.lostBeyondKnown { lines.append("  (older links may be lost too: this device remembers only its newest)") }
        if plan.lostReadCount > 0 {
            let reads = plan.lostReads.map { Hex.encode($0.item) }
            lines.append("  lost \(plan.lostReadCount) entr\(plan.lostReadCount == 1 ? "y" : "ies") of this device's audit chain\(reads.isEmpty ? "" : " (reads of " + reads.joined(separator: " ") + ")")")
        }
        for (device, kept) in plan.lostAudit { lines.append("  lost audit entries of device \(device) (this device had checked them up to \(kept))") }
        if let header = plan.header { lines.append("  the keychain's header went back from generation \(header.seen) to \(header.server)") }
        for revocation in plan.revocations {
            let what = revocation.staleGroups.isEmpty
                ? "device \(revocation.device), revoked at epoch \(revocation.epoch), is approved again"
                : "device \(revocation.device), revoked at epoch \(revocation.epoch), still holds the key of \(list(revocation.staleGroups))"
            lines.append("  lost revocation: \(what): this device revokes it again (it must be approved and hold its groups)")
        }
        var redo: [String] = []
        for device in plan.lostApprovals { redo.append(device == plan.device ? "this device's approval (an approved device approves it again)" : "approve device \(device) again") }
        for (group, device) in plan.lostGrants { redo.append("grant group \(Printable.clip(group)) to device \(device) again") }
        if plan.lostStates.contains(where: { $0.signer == plan.device && (!$0.items.isEmpty || $0.moreItems > 0) }) {
            redo.append("add, change or delete again the items this device wrote in the lost states (their references above)")
        }
        let others = Set(plan.lostStates.map(\.signer).filter { $0 != plan.device }).sorted()
        if !others.isEmpty {
            redo.append(others.count == 1 ? "ask device \(others[0]) what it wrote: its own recover lists it"
                                           : "ask devices \(others.map(String.init).joined(separator: ", ")) what they wrote: their own recover lists it")
        }
        if !redo.isEmpty { lines.append("to redo: " + redo.joined(separator: "; ")) }
        return lines
    }

    private static func list(_ groups: [String]) -> String { groups.map { Printable.clip($0) }.joined(separator: ", ") }

    private static func writeRecoveryJSON(_ done: RemoteAdmin.Recovery, needed: Bool, _ context: Context) {
        var w = JSONWriter()
        func links(_ key: String, _ links: [RemoteAdmin.Recovery.LostLink]) {
            w.key(key); w.beginArray()
            for link in links {
                w.beginObject()
                w.key("number"); w.int(link.number)
                w.key("signer"); w.int(link.signer)
                w.key("changes"); w.beginArray(); for change in link.changes { w.string(change) }; w.endArray()
                w.key("items"); w.beginArray(); for item in link.items { w.string(Hex.encode(item)) }; w.endArray()
                w.key("moreItems"); w.int(link.moreItems)
                w.endObject()
            }
            w.endArray()
        }
        w.beginObject()
        w.key("url"); w.string(done.url)
        w.key("needed"); w.bool(needed)
        w.key("device"); w.int(done.device)
        w.key("before"); if let kept = done.keptView { w.string(kept) } else { w.null() }
        w.key("now"); w.string(done.serverView)
        links("lostMembership", done.lostMembership)
        links("lostStates", done.lostStates)
        w.key("lostBeyondKnown"); w.bool(done.lostBeyondKnown)
        w.key("lostReads"); w.int(done.lostReadCount)
        w.key("lostReadItems"); w.beginArray(); for read in done.lostReads { w.string(Hex.encode(read.item)) }; w.endArray()
        w.key("revocations"); w.beginArray()
        for revocation in done.revocations {
            w.beginObject()
            w.key("device"); w.int(revocation.device)
            w.key("epoch"); w.int(revocation.epoch)
            switch revocation.outcome {
            case .reapplied(let epoch): w.key("reappliedAt"); w.int(epoch)
            case .failed(let why): w.key("failed"); w.string(why)
            case .pending: break
            }
            w.endObject()
        }
        w.endArray()
        w.key("lostApprovals"); w.beginArray(); for device in done.lostApprovals { w.int(device) }; w.endArray()
        w.endObject()
        context.out.bytes(w.bytes)
        context.out.text("\n")
    }
}
