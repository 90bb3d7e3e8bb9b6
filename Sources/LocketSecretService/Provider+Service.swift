import CDBus
import Glibc
import LocketCore
import LocketSupport

/// org.freedesktop.Secret.Service at /org/freedesktop/secrets.
extension Provider {
    func service(_ call: Call, _ out: inout MessageWriter) throws {
        if call.interface == Provider.propertiesInterface {
            return try properties(call, &out, interface: Provider.serviceInterface, names: ["Collections"], get: { name in
                guard name == "Collections" else { return nil }
                let paths = self.existingCollections().map(\.path)
                return { $0.variant("ao") { $0.objectPaths(paths) } }
            }, set: { name, _ in throw BusError.readOnly("\(name) is read-only") })
        }
        guard call.interface.isEmpty || call.interface == Provider.serviceInterface else {
            throw BusError.unknownMethod("no interface \(call.interface) at \(call.path)")
        }
        var args = MessageReader(call.message)
        switch call.member {
        case "OpenSession": try openSession(call, &args, &out)
        case "SearchItems":
            let attributes = try args.stringDictionary(limit: FreeForm.maximumCount)
            let query = try FreeFormMapping.query(attributes)
            var locked: [String] = []
            var failure: (any Error)?
            // One item at a time, each unlocked one's path straight into the
            // reply: a search matching 10,000 items holds neither their
            // attributes nor their paths (the locked ones', fewer, wait).
            out.container(DBusType.array, "o") { unlocked in
                do {
                    // A session collection not made yet holds nothing: it is not made (or opened) for a search.
                    for collection in existingCollections() where collection.session == nil || access(collection.keychainPath, F_OK) == 0 {
                        let keychain = try open(collection, call.client)
                        defer { keychain.releaseFile() }
                        try keychain.forEachMatch(query) { item in
                            guard item.availability != .available || FreeFormMapping.has(item, attributes) else { return }
                            let path = ObjectPath.item(collection.path, ref: item.persistentRef)
                            if item.availability == .available { unlocked.objectPath(path) } else { locked.append(path) }
                        }
                    }
                } catch {
                    failure = error
                }
            }
            if let failure { throw failure }
            out.objectPaths(locked)
        case "Unlock":
            let objects = try args.objectPaths(limit: Limits.objectsPerCall)
            let (unlocked, prompt) = try unlock(objects, call)
            out.objectPaths(unlocked)
            out.objectPath(prompt)
        case "Lock":
            out.objectPaths(try lock(try args.objectPaths(limit: Limits.objectsPerCall), call))
            out.objectPath(ObjectPath.none)
        case "GetSecrets":
            let paths = try args.objectPaths(limit: Limits.objectsPerCall)
            let sessionPath = try args.objectPath()
            let session = try self.session(sessionPath, call)
            var secrets: [(String, Secret)] = []
            for path in paths {
                guard case .item(let name, _, let ref) = ObjectPath.target(path, alias: { self.aliases[$0] }),
                      let collection = collections[name] else { continue }
                // Locked and missing items are left out, as the API says.
                if let secret = try? secret(collection, ref: ref, call) { secrets.append((path, secret)) }
            }
            var failure: Error?
            out.container(DBusType.array, "{o(oayays)}") { array in
                for (path, secret) in secrets {
                    array.container(DBusType.dictEntry, nil) { entry in
                        entry.objectPath(path)
                        do { try Provider.write(secret, session: session, sessionPath: sessionPath, &entry) } catch { failure = error }
                    }
                }
            }
            if let failure { throw failure }
        case "ReadAlias":
            let name = try args.string()
            // A keychain not made yet has no collection: "/" lets the client create it (CreateCollection with the alias).
            let collection = aliases[name].flatMap { collections[$0] }.flatMap { $0.exists ? $0 : nil }
            out.objectPath(collection?.path ?? ObjectPath.none)
        case "SetAlias":
            let name = try args.string()
            let path = try args.objectPath()
            // An alias is a path element (/org/freedesktop/secrets/aliases/NAME), as a collection's name is.
            guard !name.isEmpty, name.utf8.count <= Limits.aliasLength, name.utf8.allSatisfy(ObjectPath.isElementByte) else {
                throw BusError.invalidArgs("'\(Printable.clip(name))' is not an alias: 1 to \(Limits.aliasLength) of A-Z, a-z, 0-9 and _")
            }
            if path == ObjectPath.none {
                aliases[name] = nil
            } else {
                guard case .collection(let collection, _) = ObjectPath.target(path, alias: { self.aliases[$0] }),
                      collections[collection] != nil else { throw BusError.noSuchObject("no collection at \(path.prefix(200))") }
                guard aliases[name] != nil || aliases.count < Limits.aliases else { throw Limits.exceeded("more than \(Limits.aliases) aliases") }
                aliases[name] = collection
            }
        case "CreateCollection":
            let properties = try args.variantDictionary()
            let alias = try args.string()
            var label = ""
            if var value = properties[Provider.collectionInterface + ".Label"] { label = try value.string() }
            let (collection, prompt) = try createCollection(label: label, alias: alias, call)
            out.objectPath(collection)
            out.objectPath(prompt)
        default:
            throw BusError.unknownMethod("no method \(call.member) on the service")
        }
    }

    private func openSession(_ call: Call, _ args: inout MessageReader, _ out: inout MessageWriter) throws {
        let name = try args.string()
        var input = try args.container(DBusType.variant, "a variant")
        guard sessions.admits(call.client.account) else { throw Limits.exceeded("more than \(Limits.sessionsPerClient) open sessions") }
        // All clients together at the bound: the client holding the most gives way (its oldest session closes).
        while sessions.isFull, let oldest = sessions.oldestOfLargest { sessions.remove(oldest.id) }
        let session: TransferSession
        switch TransferSession.Algorithm(rawValue: name) {
        case .plain?:
            session = TransferSession()
            out.variant("s") { $0.string("") }
        case .dh?:
            session = try TransferSession(peer: try input.bytes(), keys: sessionKeys)
            out.variant("ay") { $0.bytes(session.publicKey) }
        case nil:
            throw BusError(name: "org.freedesktop.DBus.Error.NotSupported", message: "the algorithm '\(name.prefix(64))' is not supported (plain, dh-ietf1024-sha256-aes128-cbc-pkcs7)")
        }
        let id = newID()
        sessions.add(id, owner: call.sender, account: call.client.account, session)
        out.objectPath(ObjectPath.sessionPrefix + id)
    }

    /// The caller's session at `path`; another client's session or none is NoSession.
    func session(_ path: String, _ call: Call) throws -> TransferSession {
        let id = String(path.dropFirst(ObjectPath.sessionPrefix.count))
        guard path.hasPrefix(ObjectPath.sessionPrefix), sessions.owner(of: id) == call.sender, let session = sessions[id] else {
            throw BusError.noSession("no session at \(path.prefix(200)) for this client")
        }
        return session
    }

    /// The collections whose keychain exists now, in name order.
    func existingCollections() -> [Collection] {
        collections.values.filter(\.exists).sorted { $0.name < $1.name }
    }

    /// org.freedesktop.DBus.Properties on one object: `get` gives a writer of
    /// the named property's variant (nil: no such property), `set` changes one.
    func properties(_ call: Call, _ out: inout MessageWriter, interface: String, names: [String],
                    get: (String) throws -> ((inout MessageWriter) -> Void)?, set: (String, inout MessageReader) throws -> Void) throws {
        var args = MessageReader(call.message)
        let asked = try args.string()
        guard asked == interface || (asked.isEmpty && call.member == "GetAll") else {
            if call.member == "GetAll" { out.container(DBusType.array, "{sv}") { _ in }; return }
            throw BusError.unknownProperty("no interface \(asked.prefix(100)) here")
        }
        switch call.member {
        case "Get":
            let name = try args.string()
            guard let writer = try get(name) else { throw BusError.unknownProperty("no property \(name.prefix(100))") }
            writer(&out)
        case "GetAll":
            var writers: [(String, (inout MessageWriter) -> Void)] = []
            for name in names { if let writer = try get(name) { writers.append((name, writer)) } }
            out.container(DBusType.array, "{sv}") { array in
                for (name, writer) in writers {
                    array.container(DBusType.dictEntry, nil) { entry in
                        entry.string(name)
                        writer(&entry)
                    }
                }
            }
        case "Set":
            let name = try args.string()
            guard names.contains(name) else { throw BusError.unknownProperty("no property \(name.prefix(100))") }
            var value = try args.container(DBusType.variant, "a variant")
            try set(name, &value)
        default:
            throw BusError.unknownMethod("no method \(call.member) on org.freedesktop.DBus.Properties")
        }
    }
}
