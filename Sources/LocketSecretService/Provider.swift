import CDBus
import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

/// The Secret Service provider (SPEC §18): owns org.freedesktop.secrets on a
/// session bus and answers the API over locket keychains, one collection per
/// keychain.
///
/// One thread, one poll loop: the bus connection, a signalfd, and the
/// descriptors of prompts in progress (askpass children, the terminal, a
/// password hashed on a thread of its own: PromptJob), so a prompt
/// never holds up another client. Every request opens its keychain
/// afresh and releases the file before it answers (docs/architecture/sqlite.md,
/// "The connection's lifetime"): a `locket lock` or `unlock` in a shell is
/// seen by the next request, and no item is kept in memory between requests.
public final class Provider {
    /// The well-known name and the interfaces.
    static let busName = "org.freedesktop.secrets"
    static let serviceInterface = "org.freedesktop.Secret.Service"
    static let collectionInterface = "org.freedesktop.Secret.Collection"
    static let itemInterface = "org.freedesktop.Secret.Item"
    static let sessionInterface = "org.freedesktop.Secret.Session"
    static let promptInterface = "org.freedesktop.Secret.Prompt"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"

    let connection: OpaquePointer
    /// A second connection, for asking the bus daemon who a new client is:
    /// its answers don't wait behind the calls the daemon holds for the
    /// provider, nor count against what libdbus reads ahead on `connection`.
    let identityConnection: OpaquePointer
    let environment: Environment
    let options: ProviderOptions
    /// What the provider reports (one line each on stderr); never a secret.
    let log: (String) -> Void

    /// The collections served, by path element.
    var collections: [String: Collection] = [:]
    /// Alias -> collection name (`default` at start; SetAlias changes it for this run).
    var aliases: [String: String] = [:]
    /// Open sessions by id, each with the connection that opened it and its client.
    var sessions = OwnedObjects<TransferSession>(perClient: Limits.sessionsPerClient, total: Limits.sessions)
    /// The DH sessions' keys.
    let sessionKeys = SessionKeys(capacity: Limits.sessions + 16)
    /// Prompts by id, each with its client.
    var prompts = OwnedObjects<Prompt>(perClient: Limits.promptsPerClient, total: Limits.prompts)
    /// The object paths the prompts in progress hold, all together.
    var promptObjects = 0
    /// Calls read and not yet answered, a queue per connection.
    var calls = CallQueue()
    /// The secret portal's calls waiting for an unlock, by handle (Provider+Portal).
    var portalRequests: [String: PortalRequest] = [:]
    /// The secret portal's answers held back until their time (Provider+Portal's `portalReply`).
    var portalReplies: [(due: Double, reply: OpaquePointer)] = []
    /// What each connected client is (uid checked, executable mapped), by unique name.
    var callers: [String: ClientIdentity] = [:]
    /// Clients the bus daemon said are not this user's (or could not name), with why.
    var refusedCallers: [String: String] = [:]
    /// Clients whose identity was asked of the bus daemon, not yet answered, with when (Prompt.now()).
    var identifying: [String: Int] = [:]
    var nextID = 0
    /// The executable map, its entitlements read at start-up.
    let apps: [AppEntry]
    /// Who a caller the map does not name is.
    let defaultCaller: Caller
    /// Set when the loop should end: a signal, the bus gone, the name lost.
    var stopReason: String?
    /// While a call is answered: the signals it emits, sent after its reply
    /// (a prompt dismissed at once must not complete before Prompt() returns).
    var held: [OpaquePointer]?
    /// logind on the system bus, when the provider serves a session (Provider+Logind).
    var logind: Logind?

    /// One served keychain.
    final class Collection {
        let name: String
        let keychainPath: String
        var label: String
        /// The session collection's own place (SessionCollection); nil for a keychain of the user's.
        let session: Session?
        /// When the keychain was made, once asked (`createdSeconds`).
        var created: UInt64?
        init(name: String, keychainPath: String, label: String, session: Session? = nil) {
            self.name = name
            self.keychainPath = keychainPath
            self.label = label
            self.session = session
        }
        var path: String { ObjectPath.collection(name) }
        /// Whether it is there to serve: its keychain exists (the session collection always is, made at first use).
        var exists: Bool { session != nil || access(keychainPath, F_OK) == 0 }

        struct Session {
            let directory: String
            let environment: Environment
        }

        /// The keychain file's birth time where its file system records one
        /// (statx), else its change time when first asked, kept for the run:
        /// the change time moves with every item added.
        var createdSeconds: UInt64 {
            if let created { return created }
            var birth = locket_file_birth_time(keychainPath)
            if birth < 0 {
                var info = stat()
                birth = stat(keychainPath, &info) == 0 ? Int64(info.st_ctim.tv_sec) : -1
            }
            guard birth >= 0 else { return 0 }
            created = UInt64(birth)
            return UInt64(birth)
        }
    }

    /// Connects to `address` (the session bus) and registers with it.
    public init(address: String, options: ProviderOptions, environment: Environment, log: @escaping (String) -> Void) throws {
        self.environment = environment
        self.options = options
        self.log = log
        apps = try options.apps.map { app in
            let resolved = try pointerOrErrno("realpath") { realpath(app.executable, nil) }.get { ProviderError("\(app.executable): \($0)") }
            defer { free(resolved) }
            return AppEntry(executable: String(cString: resolved), entitlements: try Entitlements.load(path: app.entitlements))
        }
        defaultCaller = try options.entitlements.map { .app(try Entitlements.load(path: $0)) } ?? .owner
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let connection = dbus_connection_open_private(address, &error) else {
            throw ProviderError("cannot connect to the session bus at \(address): \(Provider.text(error))")
        }
        guard dbus_bus_register(connection, &error) != 0 else {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw ProviderError("cannot register with the session bus: \(Provider.text(error))")
        }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        dbus_connection_set_max_received_size(connection, Limits.receivedBytes)
        var socket: Int32 = -1
        if dbus_connection_get_unix_fd(connection, &socket) != 0 {
            var size = Int32(Limits.unreadReplies)
            setsockopt(socket, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        guard let identityConnection = dbus_connection_open_private(address, &error), dbus_bus_register(identityConnection, &error) != 0 else {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw ProviderError("cannot connect to the session bus at \(address): \(Provider.text(error))")
        }
        dbus_connection_set_exit_on_disconnect(identityConnection, 0)
        // Only the daemon's short answers are wanted here; whatever else a client sends it is refused as read.
        dbus_connection_set_max_received_size(identityConnection, 1024 * 1024)
        self.connection = connection
        self.identityConnection = identityConnection
        for (name, path) in options.collections {
            collections[ObjectPath.element(name)] = Collection(name: ObjectPath.element(name), keychainPath: path, label: name)
        }
        if let first = options.defaultCollection ?? options.collections.first?.name { aliases["default"] = ObjectPath.element(first) }
        // gnome-keyring's other aliases: `login` (clients that build /aliases/login) and `session`.
        if collections["login"] != nil { aliases["login"] = "login" }
        if collections[SessionCollection.name] == nil, let session = SessionCollection.make(environment: environment, log: log) {
            collections[SessionCollection.name] = session
        }
        if collections[SessionCollection.name] != nil { aliases[SessionCollection.name] = SessionCollection.name }
    }

    deinit {
        for prompt in prompts.values { prompt.cancel() }
        for case let session? in collections.values.map(\.session) { SessionCollection.remove(session.directory) }
        calls.removeAll()
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
        dbus_connection_close(identityConnection)
        dbus_connection_unref(identityConnection)
    }

    static func text(_ error: DBusError) -> String {
        error.message.map { String(cString: $0) } ?? "unknown error"
    }

    // MARK: - The loop

    /// Serves until a signal in `signals` (a signalfd), the bus going away,
    /// or the name taken by a `--replace`. `childExited` is asked after each
    /// signal (the `-- COMMAND` form) and ends the loop when it says so.
    public func serve(signals: Int32, onSignal: (Int32) -> Bool) {
        let filter: DBusHandleMessageFunction = { _, message, data in
            guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            Unmanaged<Provider>.fromOpaque(data).takeUnretainedValue().receive(message)
            return DBUS_HANDLER_RESULT_HANDLED
        }
        dbus_connection_add_filter(connection, filter, Unmanaged.passUnretained(self).toOpaque(), nil)
        defer { dbus_connection_remove_filter(connection, filter, Unmanaged.passUnretained(self).toOpaque()) }
        var busFD: Int32 = -1, identityFD: Int32 = -1
        dbus_connection_get_unix_fd(connection, &busFD)
        dbus_connection_get_unix_fd(identityConnection, &identityFD)
        while stopReason == nil {
            answerQueued()
            if dbus_connection_get_is_connected(connection) == 0 {
                stopReason = "the session bus went away"
                break
            }
            if stopReason != nil { break }
            while logind?.hasQueued == true { serviceLogind() }
            // Calls still queued wait for their clients' identities, and count against what libdbus
            // reads ahead: at its bound the bus stays readable and nothing is read (a spin). Until
            // an identity comes (the identity connection wakes the loop), the bus is left alone.
            let busEvents = calls.count > 0 ? 0 : Int16(POLLIN)
            var fds = [pollfd(fd: busFD, events: busEvents, revents: 0), pollfd(fd: signals, events: Int16(POLLIN), revents: 0)]
            let watched = prompts.values.compactMap { prompt in prompt.descriptor.map { (prompt, $0) } }
            for (_, fd) in watched { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            var logindIndex: Int?
            if let fd = logind?.descriptor { logindIndex = fds.count; fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            // The bus daemon's answers about new clients: read by answerQueued.
            if !identifying.isEmpty { fds.append(pollfd(fd: identityFD, events: Int16(POLLIN), revents: 0)) }
            // Interrupted: as if nothing were ready; the loop looks again.
            // The sooner of a prompt's deadline and a held portal answer (-1: neither).
            let (promptWait, portalWait) = (promptTimeoutMilliseconds(), portalReplyTimeoutMilliseconds())
            var timeout = promptWait < 0 ? portalWait : portalWait < 0 ? promptWait : min(promptWait, portalWait)
            if !identifying.isEmpty && (timeout < 0 || timeout > 1000) { timeout = 1000 }  // to give up on an identity (readIdentities)
            let ready = valueOrErrno("poll", retryOnInterrupt: false) { poll(&fds, nfds_t(fds.count), timeout) }
            if let failure = ready.error, failure.code != EINTR { stopReason = "poll failed: \(failure)"; break }
            if fds[1].revents != 0 {
                var sent: Int32 = 0
                while case let signal = locket_signalfd_next(signals, &sent), signal != 0 {
                    if onSignal(signal) { stopReason = stopReason ?? "stopped by signal \(signal)" }
                }
            }
            for (k, (prompt, _)) in watched.enumerated() where fds[2 + k].revents != 0 { promptReadable(prompt) }
            if let logindIndex, fds[logindIndex].revents != 0 { serviceLogind() }
            expirePrompts()
            sendDuePortalReplies()
            if fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                if dbus_connection_read_write(connection, 0) == 0 {
                    stopReason = "the session bus went away"
                }
            }
        }
    }

    /// Why the loop ended, for the exit message.
    public var stopped: String { stopReason ?? "stopped" }

    /// Answers the calls libdbus has read, in the order CallQueue gives,
    /// reading on between calls, until none is left and every reply is
    /// written. Only then may the loop sleep in poll: a call libdbus read
    /// while it wrote a reply (a 1 MB secret's) waited in its queue,
    /// unanswered, until some other message woke the loop (issue 44).
    func answerQueued() {
        while stopReason == nil {
            readIdentities()
            // libdbus's queue into ours: the filter (`receive`) sorts each call by client.
            while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
            guard let message = calls.pop() else {
                dbus_connection_flush(connection)
                guard dbus_connection_get_dispatch_status(connection) == DBUS_DISPATCH_DATA_REMAINS else { return }
                continue
            }
            answer(message)
            dbus_message_unref(message)
            // The reply goes out now, not behind those of a flood (libdbus writes 2 KiB a turn
            // of read_write); the calls sent meanwhile join their queues before the next turn.
            dbus_connection_flush(connection)
            guard dbus_connection_read_write(connection, 0) != 0 else { return }
        }
    }

    func newID() -> String {
        nextID += 1
        return String(nextID)
    }
}

/// What the provider is started with (locket secret-service's options, resolved).
public struct ProviderOptions: Sendable {
    /// (path element, keychain file), in the order given.
    public var collections: [(name: String, path: String)] = []
    /// The collection the alias `default` names (nil: the first).
    public var defaultCollection: String?
    public var replace = false
    /// Executable -> entitlements file: callers running that executable get only its access groups.
    public var apps: [(executable: String, entitlements: String)] = []
    /// The entitlements of every caller the map does not name (`locket -e FILE secret-service`); nil: the owner.
    public var entitlements: String?
    public init() {}
}

/// A failure that stops the provider, worded for its one line on stderr.
public struct ProviderError: Error {
    public let message: String
    init(_ message: String) { self.message = message }
}
