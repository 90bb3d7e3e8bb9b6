import CDBus
import Glibc
import LocketCore
import LocketSupport

/// Unlock, Lock, CreateCollection and Collection.Delete, and the prompts they return.
extension Provider {
    /// Unlock: what is unlocked already, and a prompt for the rest ("/" when
    /// none). Each path comes back exactly as the client gave it (go-keyring
    /// compares the result with the path it sent).
    func unlock(_ objects: [String], _ call: Call) throws -> ([String], String) {
        var unlocked: [String] = []
        var waiting: [String] = []
        var pending: [Collection] = []
        for path in objects {
            switch ObjectPath.target(path, alias: { self.aliases[$0] }) {
            case .collection(let name, _):
                guard let collection = collections[name] else { continue }
                if !isLocked(collection, call.client) { unlocked.append(path); continue }
                waiting.append(path)
                if !pending.contains(where: { $0 === collection }) { pending.append(collection) }
            case .item(let name, _, let ref):
                guard let collection = collections[name], let item = try? item(collection, ref: ref, call.client) else { continue }
                // An item with access control needs a proof for every read, which no unlock gives: left out.
                if item.accessControl != nil { continue }
                if item.availability == .available { unlocked.append(path); continue }
                waiting.append(path)
                if !pending.contains(where: { $0 === collection }) { pending.append(collection) }
            default:
                continue
            }
        }
        guard !pending.isEmpty else { return (unlocked, ObjectPath.none) }
        return (unlocked, makePrompt(.unlock(pending: pending, objects: waiting), call))
    }

    /// Lock: forgets the keychains' when-unlocked keys for the whole session,
    /// as `locket lock` does (after-first-unlock items stay readable until
    /// `locket lock --all`). Returns the objects now locked.
    func lock(_ objects: [String], _ call: Call) throws -> [String] {
        var locked: [String] = []
        for path in objects {
            let name: String
            switch ObjectPath.target(path, alias: { self.aliases[$0] }) {
            case .collection(let n, _), .item(let n, _, _): name = n
            default: continue
            }
            guard let collection = collections[name], let keychain = try? open(collection, call.client) else { continue }
            keychain.session.lock(all: false)
            keychain.releaseFile()
            if case .item(_, _, let ref) = ObjectPath.target(path, alias: { self.aliases[$0] }),
               let item = try? item(collection, ref: ref, call.client), item.availability == .available { continue }
            locked.append(path)
        }
        return locked
    }

    /// CreateCollection: an existing alias or keychain is returned as it is;
    /// a new keychain needs its password, so a prompt asks for it twice.
    func createCollection(label: String, alias: String, _ call: Call) throws -> (String, String) {
        if !alias.isEmpty, let name = aliases[alias], let collection = collections[name] {
            if access(collection.keychainPath, F_OK) == 0 { return (collection.path, ObjectPath.none) }
            // The alias names a keychain not made yet (libsecret creates `default` so): make that one.
            return (ObjectPath.none, makePrompt(.create(name: collection.name, path: collection.keychainPath, label: collection.label, alias: alias), call))
        }
        let base = label.isEmpty ? (alias.isEmpty ? "collection" : alias) : label
        let name = ObjectPath.element(base)
        let path = try environment.dataDirectory() + "/" + name + ".keychain"
        if let collection = collections[name] ?? (access(path, F_OK) == 0 ? serve(name: name, path: path, label: base) : nil) {
            if !alias.isEmpty { aliases[alias] = collection.name }
            return (collection.path, ObjectPath.none)
        }
        return (ObjectPath.none, makePrompt(.create(name: name, path: path, label: base, alias: alias), call))
    }

    /// Collection.Delete: removes the keychain file once its password (or,
    /// for a keychain without one, its name) is typed at the prompt.
    func deleteCollectionPrompt(_ collection: Collection, _ call: Call) throws -> String {
        makePrompt(.delete(collection), call)
    }

    /// Adds a keychain to the collections served.
    @discardableResult
    func serve(name: String, path: String, label: String) -> Collection {
        let collection = Collection(name: name, keychainPath: path, label: label)
        collections[name] = collection
        return collection
    }

    private func makePrompt(_ action: Prompt.Action, _ call: Call) -> String {
        let prompt = Prompt(id: newID(), owner: call.sender, client: call.client, action: action)
        prompt.deadline = Prompt.now() + Prompt.lifetime
        prompts[prompt.id] = prompt
        return prompt.path
    }

    // MARK: - Prompt objects

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
    private func ask(_ prompt: Prompt, retry: Bool) {
        let who = prompt.client.executable ?? "a program (pid \(prompt.client.pid.map(String.init) ?? "?"))"
        let again = retry ? "Wrong password. " : ""
        let text: String
        switch prompt.action {
        case .unlock(let pending, _):
            text = "\(again)locket: \(who) asks to unlock the keychain \(pending[0].keychainPath). Password"
        case .create(_, let path, _, _):
            text = prompt.first == nil ? "\(again)locket: \(who) asks for a new keychain \(path). New password"
                                       : "locket: the new keychain \(path) again. Password"
        case .delete(let collection):
            text = "\(again)locket: \(who) asks to DELETE the keychain \(collection.keychainPath). Its password (or, without one, its name)"
        }
        guard let input = PasswordInput.start(text, environment: environment) else {
            log("a prompt for \(who) was dismissed: no LOCKET_ASKPASS, SSH_ASKPASS or terminal to ask at")
            return complete(prompt, dismissed: true)
        }
        prompt.input = input
    }

    /// The prompt's descriptor is readable: its unlock has ended, or its
    /// input has a password to use, or a cancel.
    func promptReadable(_ prompt: Prompt) {
        if let job = prompt.job {
            guard let outcome = job.finished() else { return }
            prompt.job = nil
            do {
                try outcome.get().unlock()
                try unlocked(prompt)
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
        pending.removeFirst()
        prompt.attempts = 0
        guard pending.isEmpty else {
            prompt.action = .unlock(pending: pending, objects: objects)
            return ask(prompt, retry: false)
        }
        complete(prompt, dismissed: false) { $0.variant("ao") { $0.objectPaths(objects) } }
    }

    /// Does what the prompt was for with `password`; asks again while more is needed.
    private func use(_ password: SecureBytes, _ prompt: Prompt) throws {
        switch prompt.action {
        case .unlock(let pending, _):
            // The key derivation runs on a thread of its own; the loop hears its end (promptReadable).
            if let job = UnlockJob(keychainPath: pending[0].keychainPath, caller: prompt.client.caller, environment: environment,
                                   password: password) {
                prompt.job = job
                return
            }
            let keychain = try open(pending[0], prompt.client)
            defer { keychain.releaseFile() }
            try keychain.session.unlock(password: password, timeout: nil)
            try unlocked(prompt)
        case .create(let name, let path, let label, let alias):
            guard let first = prompt.first else {
                prompt.first = password
                return ask(prompt, retry: false)
            }
            prompt.first = nil
            guard first.constantTimeEquals(password) else { throw KeychainError(.authFailed, "the two passwords differ") }
            try Keychain.create(at: path, password: password.count == 0 ? nil : password, environment: environment)
            // Made unlocked (its keys in the session), as `locket init` leaves it.
            let collection = serve(name: name, path: path, label: label)
            if !alias.isEmpty { aliases[alias] = name }
            if aliases["default"] == nil { aliases["default"] = name }
            emit(ObjectPath.service, Provider.serviceInterface, "CollectionCreated") { $0.objectPath(collection.path) }
            complete(prompt, dismissed: false) { $0.variant("o") { $0.objectPath(collection.path) } }
        case .delete(let collection):
            let keychain = try open(collection, prompt.client)
            if keychain.hasPassword {
                defer { keychain.releaseFile() }
                try keychain.session.unlock(password: password, timeout: nil)
            } else {
                keychain.releaseFile()
                guard password.bytes == Array(collection.name.utf8) else { throw KeychainError(.authFailed) }
            }
            for suffix in ["", "-wal", "-shm", "-journal"] { unlink(collection.keychainPath + suffix) }
            collections[collection.name] = nil
            aliases = aliases.filter { $0.value != collection.name }
            emit(ObjectPath.service, Provider.serviceInterface, "CollectionDeleted") { $0.objectPath(collection.path) }
            complete(prompt, dismissed: false) { $0.variant("s") { $0.string("") } }
        }
    }

    /// Sends Completed to the prompt's client and forgets the prompt.
    func complete(_ prompt: Prompt, dismissed: Bool, result: ((inout MessageWriter) -> Void)? = nil) {
        prompt.cancel()
        prompts[prompt.id] = nil
        emit(prompt.path, Provider.promptInterface, "Completed", destination: prompt.owner) { out in
            out.boolean(dismissed)
            if let result { result(&out) } else { out.variant("s") { $0.string("") } }
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
