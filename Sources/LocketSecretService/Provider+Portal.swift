import CDBus
import Glibc
import LocketCore
import LocketSupport

/// org.freedesktop.impl.portal.Secret (Portal.swift): RetrieveSecret, its
/// `version` property, and the Request objects of calls waiting for an unlock.
extension Provider {
    /// The most RetrieveSecret calls that may wait for a prompt at once.
    static let maximumPortalRequests = 256

    /// Answers a call on the portal's paths; false when `call.path` is not one of them.
    func portalCall(_ call: Call, _ out: inout MessageWriter) throws -> Bool {
        let path = call.path
        guard path == "/org/freedesktop/portal" || path == Portal.path || path.hasPrefix(Portal.requestPrefix) else { return false }
        func wants(_ interface: String) -> Bool { call.interface.isEmpty || call.interface == interface }
        // Ping and GetMachineId answer on every path, as the dispatcher answers them.
        if wants("org.freedesktop.DBus.Peer") && (call.member == "Ping" || call.member == "GetMachineId") { return false }
        if wants("org.freedesktop.DBus.Introspectable") && call.member == "Introspect" {
            switch path {
            case "/org/freedesktop/portal": out.string(Introspection.document("", nodes: ["desktop"]))
            case Portal.path: out.string(Introspection.document(Introspection.portal, nodes: []))
            default:
                guard portalRequests[path]?.owner == call.sender else { throw BusError.unknownObject(path) }
                out.string(Introspection.document(Introspection.portalRequest, nodes: []))
            }
            return true
        }
        if path.hasPrefix(Portal.requestPrefix) {
            guard let request = portalRequests[path], request.owner == call.sender else { throw BusError.unknownObject(path) }
            guard wants(Portal.requestInterface), call.member == "Close" else { throw BusError.unknownMethod("no method \(call.member) on a request") }
            closePortalRequest(request)
            return true
        }
        guard path == Portal.path else { throw BusError.unknownObject(path) }
        if call.interface == Provider.propertiesInterface {
            try properties(call, &out, interface: Portal.interface, names: ["version"], get: { name in
                name == "version" ? { $0.variant("u") { $0.uint32(Portal.version) } } : nil
            }, set: { name, _ in throw BusError.readOnly("\(name) is read-only") })
            return true
        }
        guard wants(Portal.interface), call.member == "RetrieveSecret" else {
            throw BusError.unknownMethod("no method \(call.member) on \(Portal.path)")
        }
        try retrieveSecret(call, &out)
        return true
    }

    /// RetrieveSecret(o handle, s app_id, h fd, a{sv} options) -> (u response, a{sv} results).
    private func retrieveSecret(_ call: Call, _ out: inout MessageWriter) throws {
        let received = Portal.now()
        var args = MessageReader(call.message)
        let handle = try args.objectPath()
        let appID = try args.string()
        var fd = try args.unixFD()
        // Ours to close unless a waiting request takes it.
        defer { if fd >= 0 { close(fd) } }
        _ = try args.variantDictionary()  // `token`: nothing is returned for one, so none is read
        guard handle.hasPrefix(Portal.requestPrefix), handle.count > Portal.requestPrefix.count else {
            throw BusError.invalidArgs("the handle \(Printable.clip(handle)) is not a request of \(Portal.path)")
        }
        guard portalRequests[handle] == nil else { throw BusError.invalidArgs("a request at \(Printable.clip(handle)) is already waiting") }
        // A program the executable map limits to its access groups gets no
        // app's secret, and plants none: an app's secret is the key its data
        // is sealed with, so one planted before the app's first request would
        // be known to the program that chose it.
        guard call.client.caller == defaultCaller else {
            throw BusError.accessDenied("a program limited to its access groups (--app) may not use the secret portal")
        }
        // The answer now, or held back for a client that can't yet hear the portal's Response (Portal.lateSubscriberDelay).
        func respond(_ response: Portal.Response) throws {
            guard Portal.subscribesLate(handle) else {
                out.uint32(response.rawValue)
                out.container(DBusType.array, "{sv}") { _ in }
                return
            }
            portalReply(call.message, response, notBefore: received + Portal.lateSubscriberDelay)
            throw ReplyLater()
        }
        // An app the portal could not name (a process outside any sandbox
        // and any app unit): one secret shared by every such process would be
        // no application's own.
        guard !appID.isEmpty else {
            log("the secret portal refused a request without an app ID (a process the portal could not identify)")
            return try respond(.other)
        }
        guard appID.utf8.count <= Portal.maximumAppIDLength else { throw BusError.invalidArgs("the app ID is longer than \(Portal.maximumAppIDLength) bytes") }
        guard let collection = aliases["default"].flatMap({ collections[$0] }), collection.exists else {
            log("the secret portal has no default keychain to keep \(Printable.clip(appID))'s secret in")
            return try respond(.other)
        }
        let keychain = try open(collection, call.client)
        guard keychain.hasPassword && !keychain.session.isUnlocked else {
            let response = appSecret(appID, in: keychain, collection, to: fd)
            keychain.releaseFile()
            return try respond(response)
        }
        keychain.releaseFile()
        // Locked: the answer waits for an unlock prompt (one per keychain for the portal's calls), started at once.
        guard portalRequests.count < Provider.maximumPortalRequests else {
            throw BusError(name: "org.freedesktop.DBus.Error.LimitsExceeded", message: "more than \(Provider.maximumPortalRequests) portal requests are waiting")
        }
        let waiting = portalRequests.values.first { $0.collection === collection && $0.owner == call.sender }?.prompt
        let prompt: Prompt
        if let waiting {
            prompt = waiting
        } else {
            let path = try makePrompt(.unlock(pending: [collection], objects: []), call)
            guard let made = prompts[String(path.dropFirst(ObjectPath.promptPrefix.count))] else { throw BusError.failed("no prompt was made") }
            prompt = made
        }
        prompt.answersPortal = true
        portalRequests[handle] = PortalRequest(handle: handle, appID: appID, call: call, collection: collection, fd: fd, prompt: prompt,
                                               received: received)
        fd = -1
        if waiting == nil {
            prompt.started = true
            ask(prompt, retry: false)
        }
        throw ReplyLater()
    }

    /// The app's secret written to `fd`, made and kept first if it has none.
    private func appSecret(_ appID: String, in keychain: Keychain, _ collection: Collection, to fd: Int32) -> Portal.Response {
        do {
            let secret: SecureBytes
            do {
                // Oldest first: where two exist (a keyring moved in twice), always the same one.
                guard let data = try keychain.search(Portal.query(appID: appID), returnData: true).first?.data else {
                    throw KeychainError(.itemNotFound)
                }
                secret = data
            } catch let error as KeychainError where error.code == .itemNotFound {
                secret = try Portal.randomSecret()
                let item = try keychain.add(Portal.newItem(appID: appID), data: secret)
                let path = ObjectPath.item(collection.path, ref: item.persistentRef)
                emit(collection.path, Provider.collectionInterface, "ItemCreated") { $0.objectPath(path) }
            }
            guard Portal.write(secret, to: fd) else {
                log("the secret portal could not write \(Printable.clip(appID))'s secret: its descriptor is not writable now")
                return .other
            }
            return .success
        } catch {
            log("the secret portal could not give \(Printable.clip(appID)) its secret: \(error)")
            return .other
        }
    }

    /// The unlock prompt of waiting portal requests has ended (Provider+Prompts' `complete`).
    func portalPromptEnded(_ prompt: Prompt, dismissed: Bool) {
        let waiting = portalRequests.values.filter { $0.prompt === prompt }.sorted { $0.handle < $1.handle }
        for request in waiting {
            portalRequests[request.handle] = nil
            guard !dismissed else {
                portalReply(request, .cancelled)
                continue
            }
            guard let keychain = try? open(request.collection, request.client) else {
                portalReply(request, .other)
                continue
            }
            let response = appSecret(request.appID, in: keychain, request.collection, to: request.fd)
            keychain.releaseFile()
            portalReply(request, response)
        }
    }

    /// org.freedesktop.impl.portal.Request.Close: the app closed its request
    /// (the portal then ignores our answer); its prompt goes when nothing else waits for it.
    private func closePortalRequest(_ request: PortalRequest) {
        portalRequests[request.handle] = nil
        portalReply(request, .cancelled)
        if !portalRequests.values.contains(where: { $0.prompt === request.prompt }), prompts[request.prompt.id] === request.prompt {
            complete(request.prompt, dismissed: true)
        }
    }

    /// The waiting call's reply: (response, {}).
    private func portalReply(_ request: PortalRequest, _ response: Portal.Response) {
        defer { request.release() }
        guard let message = request.message else { return }
        portalReply(message, response, notBefore: Portal.subscribesLate(request.handle) ? request.received + Portal.lateSubscriberDelay : 0)
    }

    /// The reply (response, {}) to the call `message`, sent at once, or held
    /// until `notBefore` (Portal.now()'s clock) when that is still to come.
    private func portalReply(_ message: OpaquePointer, _ response: Portal.Response, notBefore: Double) {
        guard dbus_message_get_no_reply(message) == 0, let reply = dbus_message_new_method_return(message) else { return }
        var out = MessageWriter(reply)
        out.uint32(response.rawValue)
        out.container(DBusType.array, "{sv}") { _ in }
        guard notBefore > Portal.now() else { return send(reply, now: true) }
        portalReplies.append((notBefore, reply))
    }

    /// Sends the held answers whose time has come (the loop, after each wake).
    func sendDuePortalReplies() {
        guard !portalReplies.isEmpty else { return }
        let now = Portal.now()
        let due = portalReplies.filter { $0.due <= now }
        portalReplies.removeAll { $0.due <= now }
        for (_, reply) in due { send(reply, now: true) }
    }

    /// How long the loop may sleep for the held answers: until the first is due, or for ever (-1).
    func portalReplyTimeoutMilliseconds() -> Int32 {
        guard let first = portalReplies.map(\.due).min() else { return -1 }
        return Int32(max(0, first - Portal.now()) * 1000) + 1
    }

    /// A client gone: its waiting portal requests go unanswered.
    func forgetPortalRequests(of client: String) {
        for request in portalRequests.values where request.owner == client {
            portalRequests[request.handle] = nil
            request.release()
        }
    }
}
