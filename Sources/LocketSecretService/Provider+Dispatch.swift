import CDBus
import Glibc
import LocketCore
import LocketSupport

/// An error reply with one of the API's names (or D-Bus's own).
struct BusError: Error {
    let name: String
    let message: String

    static func isLocked(_ message: String = "the item is locked") -> BusError { BusError(name: "org.freedesktop.Secret.Error.IsLocked", message: message) }
    static func noSession(_ message: String = "no such session") -> BusError { BusError(name: "org.freedesktop.Secret.Error.NoSession", message: message) }
    static func noSuchObject(_ message: String = "no such object") -> BusError { BusError(name: "org.freedesktop.Secret.Error.NoSuchObject", message: message) }
    static func invalidArgs(_ message: String) -> BusError { BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: message) }
    static func accessDenied(_ message: String) -> BusError { BusError(name: "org.freedesktop.DBus.Error.AccessDenied", message: message) }
    static func failed(_ message: String) -> BusError { BusError(name: "org.freedesktop.DBus.Error.Failed", message: message) }
    static func unknownMethod(_ message: String) -> BusError { BusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: message) }
    static func unknownObject(_ path: String) -> BusError { BusError(name: "org.freedesktop.DBus.Error.UnknownObject", message: "no object at \(path.prefix(200))") }
    static func unknownProperty(_ message: String) -> BusError { BusError(name: "org.freedesktop.DBus.Error.UnknownProperty", message: message) }
    static func readOnly(_ message: String) -> BusError { BusError(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: message) }

    /// A keychain's failure as the client sees it: locked is IsLocked, a
    /// missing item NoSuchObject, the rest Failed with locket's words (which never hold a secret).
    init(_ error: KeychainError) {
        switch error.code {
        case .interactionNotAllowed: self = .isLocked(error.description)
        case .itemNotFound, .noSuchKeychain: self = .noSuchObject(error.description)
        case .missingEntitlement: self = .accessDenied(error.description)
        case .param, .dataTooLarge: self = .invalidArgs(error.description)
        default: self = .failed(error.description)
        }
    }

    init(name: String, message: String) {
        self.name = name
        self.message = message
    }
}

/// One method call being answered.
struct Call {
    let message: OpaquePointer
    let sender: String
    let path: String
    let interface: String
    let member: String
    let client: ClientIdentity
}

extension Provider {
    /// Every message libdbus reads: the bus daemon's signals are acted on at
    /// once (a client gone takes its waiting calls with it), method calls
    /// wait in their client's queue (CallQueue) to be answered in turn.
    func receive(_ message: OpaquePointer) {
        let type = dbus_message_get_type(message)
        if type == DBUS_MESSAGE_TYPE_SIGNAL {
            busSignal(message)
            return
        }
        guard type == DBUS_MESSAGE_TYPE_METHOD_CALL else { return }
        let sender = dbus_message_get_sender(message).map { String(cString: $0) } ?? ""
        let account = awaitsIdentity(sender) ? nil : callers[sender]?.account ?? sender
        guard let refused = calls.push(message, from: sender, account: account) else { return }
        if dbus_message_get_no_reply(refused) == 0 {
            replyError(refused, Limits.exceeded("more than \(Limits.queuedCalls) calls are waiting; this client has the most"))
        }
        if refused != message { dbus_message_unref(refused) }
    }

    /// Answers one method call.
    func answer(_ message: OpaquePointer) {
        let noReply = dbus_message_get_no_reply(message) != 0
        held = []
        defer { releaseHeld() }
        do {
            guard let sender = dbus_message_get_sender(message).map({ String(cString: $0) }) else { throw BusError.accessDenied("no sender") }
            let client = try identify(sender)
            let call = Call(message: message, sender: sender,
                            path: dbus_message_get_path(message).map { String(cString: $0) } ?? "/",
                            interface: dbus_message_get_interface(message).map { String(cString: $0) } ?? "",
                            member: dbus_message_get_member(message).map { String(cString: $0) } ?? "", client: client)
            guard let reply = dbus_message_new_method_return(message) else { return }
            var writer = MessageWriter(reply)
            do {
                try route(call, &writer)
            } catch {
                // The reply begun is not sent: an error goes instead (every refused call leaked it, ~0.5 KiB).
                dbus_message_unref(reply)
                throw error
            }
            if noReply { dbus_message_unref(reply) } else if writer.ok { send(reply, now: true) } else {
                dbus_message_unref(reply)
                replyError(message, .failed("out of memory"))
            }
        } catch is ReplyLater {
            // Answered when its prompt ends (Provider+Portal).
        } catch let error as BusError {
            if !noReply { replyError(message, error) }
        } catch let error as ArgumentError {
            if !noReply { replyError(message, .invalidArgs(error.message)) }
        } catch let error as KeychainError {
            if !noReply { replyError(message, BusError(error)) }
        } catch {
            if !noReply { replyError(message, .failed("\(error)")) }
        }
    }

    func replyError(_ message: OpaquePointer, _ error: BusError) {
        guard let reply = dbus_message_new_error(message, error.name, error.message.replacingNULs()) else { return }
        send(reply, now: true)
    }

    /// Routes a call by its path's target and interface. An empty interface
    /// (allowed by D-Bus) matches the member in any of the object's interfaces.
    private func route(_ call: Call, _ out: inout MessageWriter) throws {
        if try portalCall(call, &out) { return }
        let target = ObjectPath.target(call.path) { self.aliases[$0] }
        func wants(_ interface: String) -> Bool { call.interface.isEmpty || call.interface == interface }
        if wants("org.freedesktop.DBus.Introspectable") && call.member == "Introspect" {
            out.string(try introspect(target, call))
            return
        }
        if wants("org.freedesktop.DBus.Peer") {
            switch call.member {
            case "Ping": return
            case "GetMachineId":
                let id = dbus_get_local_machine_id()
                defer { dbus_free(id) }
                out.string(id.map { String(cString: $0) } ?? "")
                return
            default: break
            }
        }
        switch target {
        case .service: try service(call, &out)
        case .collection(let name, _): try collectionCall(call, try collection(name, call.path), &out)
        case .item(let name, _, let ref): try itemCall(call, try collection(name, call.path), ref: ref, &out)
        case .session(let id):
            guard wants(Provider.sessionInterface), call.member == "Close" else { throw BusError.unknownMethod("no method \(call.member) on a session") }
            guard sessions.owner(of: id) == call.sender else { throw BusError.unknownObject(call.path) }
            sessions.remove(id)
        case .prompt(let id):
            guard let prompt = prompts[id], prompt.owner == call.sender else { throw BusError.unknownObject(call.path) }
            try promptCall(call, prompt)
        case .root, .ancestor, .collections, .unknown:
            throw BusError.unknownObject(call.path)
        }
    }

    /// The collection named `name`, or UnknownObject.
    func collection(_ name: String, _ path: String) throws -> Collection {
        guard let collection = collections[name] else { throw BusError.unknownObject(path) }
        return collection
    }

    private func introspect(_ target: ObjectPath.Target, _ call: Call) throws -> String {
        switch target {
        case .root: return Introspection.document("", nodes: ["org"])
        case .ancestor: return Introspection.document("", nodes: call.path == "/org" ? ["freedesktop"] : ["portal", "secrets"])
        case .service: return Introspection.document(Introspection.service, nodes: ["collection", "aliases", "session", "prompt"])
        case .collections:
            return Introspection.document("", nodes: call.path.hasSuffix("aliases") ? aliases.keys.sorted() : collections.keys.sorted())
        case .collection(let name, _):
            let collection = try self.collection(name, call.path)
            let refs = (try? itemPaths(collection, call.client) { Hex.encodeRef($0) }) ?? []
            return Introspection.document(Introspection.collection, nodes: refs)
        case .item: return Introspection.document(Introspection.item, nodes: [])
        case .session(let id):
            guard sessions[id] != nil else { throw BusError.unknownObject(call.path) }
            return Introspection.document(Introspection.session, nodes: [])
        case .prompt(let id):
            guard prompts[id] != nil else { throw BusError.unknownObject(call.path) }
            return Introspection.document(Introspection.prompt, nodes: [])
        case .unknown:
            if call.path == ObjectPath.service + "/session" { return Introspection.document("", nodes: sessions.ids(ownedBy: call.sender)) }
            if call.path == ObjectPath.service + "/prompt" { return Introspection.document("", nodes: prompts.ids(ownedBy: call.sender)) }
            throw BusError.unknownObject(call.path)
        }
    }

    /// NameOwnerChanged (a client gone: its sessions, prompts and identity
    /// go too) and NameLost (a `--replace` took the name: stop).
    private func busSignal(_ message: OpaquePointer) {
        guard dbus_message_get_sender(message).map({ String(cString: $0) }) == "org.freedesktop.DBus" else { return }
        let member = dbus_message_get_member(message).map { String(cString: $0) }
        var reader = MessageReader(message)
        if member == "NameLost", (try? reader.string()) == Provider.busName {
            stopReason = "\(Provider.busName) was taken by another provider (--replace)"
            return
        }
        guard member == "NameOwnerChanged", let name = try? reader.string(), let _ = try? reader.string(),
              let newOwner = try? reader.string(), newOwner.isEmpty, name.hasPrefix(":") else { return }
        forget(client: name)
    }

    /// Drops what belonged to a client that left the bus, its calls not yet answered included.
    func forget(client name: String) {
        callers[name] = nil
        refusedCallers[name] = nil
        identifying[name] = nil
        calls.drop(name)
        forgetPortalRequests(of: name)
        _ = sessions.removeAll(ownedBy: name)
        for prompt in prompts.removeAll(ownedBy: name) {
            prompt.cancel()
            promptObjects -= prompt.objectCount
        }
    }
}

extension Hex {
    /// An item's path element.
    static func encodeRef(_ ref: [UInt8]) -> String { encode(ref) }
}
