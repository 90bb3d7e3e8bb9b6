import CDBus
import Glibc
import LocketCore
import LocketSupport

/// The prompt objects: Prompt() asks for the password (PasswordInput), the
/// work it is for runs on a thread (PromptJob), and Completed ends it.
extension Provider {
    func promptCall(_ call: Call, _ prompt: Prompt) throws {
        guard call.interface.isEmpty || call.interface == Provider.promptInterface else {
            throw BusError.unknownMethod("no interface \(call.interface) at \(call.path)")
        }
        switch call.member {
        case "Prompt":
            guard !prompt.started else { return }
            prompt.started = true
            ask(prompt, retry: false)
        case "Dismiss":
            complete(prompt, dismissed: true)
        default:
            throw BusError.unknownMethod("no method \(call.member) on a prompt")
        }
    }

    /// Asks for the password the prompt needs now; nothing can ask: dismissed.
    func ask(_ prompt: Prompt, retry: Bool) {
        // Every name in the text is escaped as the command line escapes what
        // it prints: an executable named with a newline and terminal escapes
        // must not write a line of its own at the askpass or the terminal.
        let who = prompt.client.executable.map { Printable.escape($0) } ?? "a program (pid \(prompt.client.pid.map(String.init) ?? "?"))"
        let again = retry ? "Wrong password. " : ""
        let text: String
        switch prompt.action {
        case .unlock(let pending, _):
            text = "\(again)locket: \(who) asks to unlock the keychain \(Printable.escape(pending[0].keychainPath)). Password"
        case .create(_, let path, _, _):
            text = prompt.first == nil ? "\(again)locket: \(who) asks for a new keychain \(Printable.escape(path)). New password"
                                       : "locket: the new keychain \(Printable.escape(path)) again. Password"
        case .delete(let collection):
            text = "\(again)locket: \(who) asks to DELETE the keychain \(Printable.escape(collection.keychainPath)). Its password (or, without one, its name)"
        }
        guard let input = PasswordInput.start(text, environment: environment) else {
            log("a prompt for \(who) was dismissed: no LOCKET_ASKPASS, SSH_ASKPASS or terminal to ask at")
            return complete(prompt, dismissed: true)
        }
        prompt.input = input
    }

    /// The prompt's descriptor is readable: its job has ended, or its
    /// input has a password to use, or a cancel.
    func promptReadable(_ prompt: Prompt) {
        if let job = prompt.job {
            guard let outcome = job.finished() else { return }
            prompt.job = nil
            do {
                try finish(prompt, try outcome.get())
            } catch {
                failed(prompt, error)
            }
            return
        }
        guard let input = prompt.input, let outcome = input.read() else { return }
        prompt.input = nil
        guard let password = outcome else { return complete(prompt, dismissed: true) }
        do {
            try use(password, prompt)
        } catch {
            failed(prompt, error)
        }
    }

    /// A password did not do what the prompt was for: asked again after a
    /// wrong one (three at most), dismissed on anything else.
    private func failed(_ prompt: Prompt, _ error: any Error) {
        if let error = error as? KeychainError, error.code == .authFailed {
            prompt.attempts += 1
            if prompt.attempts >= Prompt.attempts { return complete(prompt, dismissed: true) }
            return ask(prompt, retry: true)
        }
        log("a prompt failed: \(error)")
        complete(prompt, dismissed: true)
    }

    /// The first pending keychain of an unlock prompt is unlocked: on to the
    /// next, or Completed with the objects the client named.
    private func unlocked(_ prompt: Prompt) throws {
        guard case .unlock(var pending, let objects) = prompt.action else { return }
        lockedChanged(pending.removeFirst(), locked: false)
        prompt.attempts = 0
        prompt.action = .unlock(pending: pending, objects: objects)
        guard pending.isEmpty else { return ask(prompt, retry: false) }
        complete(prompt, dismissed: false)
    }

    /// Does what the prompt was for with `password`; asks again while more
    /// is needed. The work that hashes the password (Argon2id, and the
    /// wrong-password delay before it) runs on a thread (PromptJob), and
    /// `finish` does the rest when it ends.
    private func use(_ password: SecureBytes, _ prompt: Prompt) throws {
        let work: () throws -> PromptJob.Outcome
        switch prompt.action {
        case .unlock(let pending, _):
            work = PromptJob.verifying(keychainPath: pending[0].keychainPath, caller: prompt.client.caller, environment: environment,
                                       password: password)
        case .create(_, let path, _, _):
            guard let first = prompt.first else {
                prompt.first = password
                return ask(prompt, retry: false)
            }
            prompt.first = nil
            guard first.constantTimeEquals(password) else { throw KeychainError(.authFailed, "the two passwords differ") }
            work = PromptJob.creating(path: path, environment: environment, password: password)
        case .delete(let collection):
            let keychain = try open(collection, prompt.client)
            keychain.releaseFile()
            guard keychain.hasPassword else {
                guard password.bytes == Array(collection.name.utf8) else { throw KeychainError(.authFailed) }
                return try remove(collection, keychain, prompt)
            }
            work = PromptJob.verifying(keychainPath: collection.keychainPath, caller: prompt.client.caller, environment: environment,
                                       password: password)
        }
        // No thread to be had: the work runs here.
        guard let job = PromptJob(work) else { return try finish(prompt, try work()) }
        prompt.job = job
    }

    /// What a prompt's job did, acted on if the prompt is still there: an
    /// unlock unlocks; a deletion, its password right, removes the keychain;
    /// a new keychain is served.
    private func finish(_ prompt: Prompt, _ outcome: PromptJob.Outcome) throws {
        switch (prompt.action, outcome) {
        case (.unlock, .verified(let verified)):
            try verified.unlock()
            try unlocked(prompt)
        case (.delete(let collection), .verified(let verified)):
            verified.keychain.releaseFile()
            // Its password was taken away meanwhile: nothing was checked, and its name must be typed.
            guard verified.password != nil else { throw KeychainError(.authFailed) }
            try remove(collection, verified.keychain, prompt)
        case (.create(let name, let path, let label, let alias), .created):
            // Made unlocked (its keys in the session), as `locket init` leaves it.
            let collection = serve(name: name, path: path, label: label)
            if !alias.isEmpty { aliases[alias] = name }
            if aliases["default"] == nil { aliases["default"] = name }
            emit(ObjectPath.service, Provider.serviceInterface, "CollectionCreated") { $0.objectPath(collection.path) }
            complete(prompt, dismissed: false, created: collection.path)
        default:
            if case .verified(let verified) = outcome { verified.keychain.releaseFile() }
            complete(prompt, dismissed: true)
        }
    }

    /// Deletes the keychain of `collection` (`keychain`, its password or
    /// name given) with the files beside it, and stops serving it.
    private func remove(_ collection: Collection, _ keychain: Keychain, _ prompt: Prompt) throws {
        // Its keys leave the session with it.
        keychain.session.lock(all: true)
        keychain.releaseFile()
        try Keychain.removeFile(at: collection.keychainPath)
        collections[collection.name] = nil
        aliases = aliases.filter { $0.value != collection.name }
        emit(ObjectPath.service, Provider.serviceInterface, "CollectionDeleted") { $0.objectPath(collection.path) }
        complete(prompt, dismissed: false)
    }

    /// Sends Completed to the prompt's client and forgets the prompt. Its
    /// result has the type the prompted call promised, dismissed or not
    /// (libsecret checks it and, given another, never finished the call):
    /// Unlock's `ao`, the objects whose keychain is unlocked now (all of
    /// them once done); CreateCollection's `o`, the new collection or "/";
    /// a collection's Delete, which promises none, an empty string.
    func complete(_ prompt: Prompt, dismissed: Bool, created: String = ObjectPath.none) {
        prompt.cancel()
        if prompts.remove(prompt.id) != nil { promptObjects -= prompt.objectCount }
        if prompt.answersPortal { return portalPromptEnded(prompt, dismissed: dismissed) }
        emit(prompt.path, Provider.promptInterface, "Completed", destination: prompt.owner) { out in
            out.boolean(dismissed)
            switch prompt.action {
            case .unlock(let pending, let objects):
                let done = objects.filter { object in !pending.contains { $0.name == object.collection } }.map { $0.path }
                out.variant("ao") { $0.objectPaths(done) }
            case .create:
                out.variant("o") { $0.objectPath(created) }
            case .delete:
                out.variant("s") { $0.string("") }
            }
        }
    }

    /// Dismisses prompts past their deadline.
    func expirePrompts() {
        let now = Prompt.now()
        for prompt in prompts.values where now >= prompt.deadline { complete(prompt, dismissed: true) }
    }

    /// How long the loop may sleep: until the next prompt's deadline, or forever.
    func promptTimeoutMilliseconds() -> Int32 {
        guard let next = prompts.values.map(\.deadline).min() else { return -1 }
        return Int32(max(0, min(next - Prompt.now(), 3600)) * 1000 + 10)
    }
}
