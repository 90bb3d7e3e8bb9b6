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
        var waiting: [(path: String, collection: String)] = []
        var pending: [Collection] = []
        for path in objects {
            switch ObjectPath.target(path, alias: { self.aliases[$0] }) {
            case .collection(let name, _):
                guard let collection = collections[name] else { continue }
                if !isLocked(collection, call.client) { unlocked.append(path); continue }
                waiting.append((path, name))
                if !pending.contains(where: { $0 === collection }) { pending.append(collection) }
            case .item(let name, _, let ref):
                guard let collection = collections[name], let item = try? item(collection, ref: ref, call.client) else { continue }
                // An item with access control needs a proof for every read, which no unlock gives: left out.
                if item.accessControl != nil { continue }
                if item.availability == .available { unlocked.append(path); continue }
                waiting.append((path, name))
                if !pending.contains(where: { $0 === collection }) { pending.append(collection) }
            default:
                continue
            }
        }
        guard !pending.isEmpty else { return (unlocked, ObjectPath.none) }
        return (unlocked, try makePrompt(.unlock(pending: pending, objects: waiting), call))
    }

    /// Lock: forgets the keychains' when-unlocked keys for the whole session,
    /// as `locket lock` does (after-first-unlock items stay readable until
    /// `locket lock --all`). Returns the objects now locked.
    func lock(_ objects: [String], _ call: Call) throws -> [String] {
        var locked: [String] = []
        var changed: [Collection] = []
        defer { for collection in changed { lockedChanged(collection, locked: true) } }
        for path in objects {
            let name: String
            switch ObjectPath.target(path, alias: { self.aliases[$0] }) {
            case .collection(let n, _), .item(let n, _, _): name = n
            default: continue
            }
            guard let collection = collections[name], let keychain = try? open(collection, call.client) else { continue }
            let wasLocked = !keychain.hasPassword || !keychain.session.isUnlocked
            keychain.session.lock(all: false)
            keychain.releaseFile()
            // Clients that cache Locked (GDBusProxy's) hear the change.
            if !wasLocked && !changed.contains(where: { $0 === collection }) { changed.append(collection) }
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
            if collection.exists { return (collection.path, ObjectPath.none) }
            // The alias names a keychain not made yet (libsecret creates `default` so): make that one.
            return (ObjectPath.none, try makePrompt(.create(name: collection.name, path: collection.keychainPath, label: collection.label, alias: alias), call))
        }
        let base = label.isEmpty ? (alias.isEmpty ? "collection" : alias) : label
        let name = ObjectPath.element(base)
        // The keychain's file is NAME.keychain: a name a file system can hold.
        guard name.utf8.count + ".keychain".utf8.count <= Int(NAME_MAX) else {
            throw BusError.invalidArgs("the label makes a file name longer than \(NAME_MAX) bytes")
        }
        guard collections[name] != nil || collections.count < Limits.collections else {
            throw Limits.exceeded("more than \(Limits.collections) collections")
        }
        let path = try environment.dataDirectory() + "/" + name + ".keychain"
        if let collection = collections[name] ?? (access(path, F_OK) == 0 ? serve(name: name, path: path, label: base) : nil) {
            if !alias.isEmpty { aliases[alias] = collection.name }
            return (collection.path, ObjectPath.none)
        }
        return (ObjectPath.none, try makePrompt(.create(name: name, path: path, label: base, alias: alias), call))
    }

    /// Collection.Delete: removes the keychain file once its password (or,
    /// for a keychain without one, its name) is typed at the prompt.
    func deleteCollectionPrompt(_ collection: Collection, _ call: Call) throws -> String {
        try makePrompt(.delete(collection), call)
    }

    /// Adds a keychain to the collections served.
    @discardableResult
    func serve(name: String, path: String, label: String) -> Collection {
        let collection = Collection(name: name, keychainPath: path, label: label)
        collections[name] = collection
        return collection
    }

    /// A prompt for `action`, within the bounds: a client at its own is
    /// refused; when all prompts together (or the object paths they hold)
    /// are at theirs, the oldest prompts of the client holding the most are
    /// dismissed to make room.
    func makePrompt(_ action: Prompt.Action, _ call: Call) throws -> String {
        guard prompts.admits(call.client.account) else { throw Limits.exceeded("more than \(Limits.promptsPerClient) prompts in progress") }
        let prompt = Prompt(id: newID(), owner: call.sender, client: call.client, action: action)
        while prompts.isFull || promptObjects + prompt.objectCount > Limits.promptObjects, let oldest = prompts.oldestOfLargest {
            complete(oldest.value, dismissed: true)
        }
        prompt.deadline = Prompt.now() + Prompt.lifetime
        prompts.add(prompt.id, owner: call.sender, account: call.client.account, prompt)
        promptObjects += prompt.objectCount
        return prompt.path
    }
}
