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
/// descriptors of prompts in progress (askpass children, the terminal, an
/// unlock deriving its key on a thread of its own: UnlockJob), so a prompt
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
    let environment: Environment
    let options: ProviderOptions
    /// What the provider reports (one line each on stderr); never a secret.
    let log: (String) -> Void

    /// The collections served, by path element.
    var collections: [String: Collection] = [:]
    /// Alias -> collection name (`default` at start; SetAlias changes it for this run).
    var aliases: [String: String] = [:]
    /// Open sessions by id, with the unique name of the client that opened them.
    var sessions: [String: (owner: String, session: TransferSession)] = [:]
    /// Prompts by id.
    var prompts: [String: Prompt] = [:]
    /// What each connected client is (uid checked, executable mapped), by unique name.
    var callers: [String: ClientIdentity] = [:]
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
        init(name: String, keychainPath: String, label: String) {
            self.name = name
            self.keychainPath = keychainPath
            self.label = label
        }
        var path: String { ObjectPath.collection(name) }
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
        self.connection = connection
        for (name, path) in options.collections {
            collections[ObjectPath.element(name)] = Collection(name: ObjectPath.element(name), keychainPath: path, label: name)
        }
        if let first = options.defaultCollection ?? options.collections.first?.name { aliases["default"] = ObjectPath.element(first) }
    }

    deinit {
        for prompt in prompts.values { prompt.cancel() }
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }

    static func text(_ error: DBusError) -> String {
        error.message.map { String(cString: $0) } ?? "unknown error"
    }

    // MARK: - The name

    /// Takes org.freedesktop.secrets; with `replace`, from its owner. Refuses,
    /// naming the owner, when another process has it.
    public func claimName() throws {
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        // Allow replacement: a later `--replace` takes the name, and this provider then stops.
        let flags = UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE | DBUS_NAME_FLAG_ALLOW_REPLACEMENT) | (options.replace ? UInt32(DBUS_NAME_FLAG_REPLACE_EXISTING) : 0)
        let result = dbus_bus_request_name(connection, Provider.busName, flags, &error)
        if dbus_error_is_set(&error) != 0 { throw ProviderError("cannot own \(Provider.busName): \(Provider.text(error))") }
        guard result == DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER || result == DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER else {
            let owner = describeOwner(of: Provider.busName)
            if options.replace {
                throw ProviderError("\(Provider.busName) is owned by \(owner), which does not allow its replacement")
            }
            throw ProviderError("\(Provider.busName) is owned by \(owner); stop it first, or run with --replace")
        }
        // Clients that go away: their sessions, prompts and identities go too.
        dbus_bus_add_match(connection, "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged'", &error)
        dbus_error_free(&error)
        dbus_bus_add_match(connection, "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameLost'", &error)
    }

    // MARK: - The loop

    /// Serves until a signal in `signals` (a signalfd), the bus going away,
    /// or the name taken by a `--replace`. `childExited` is asked after each
    /// signal (the `-- COMMAND` form) and ends the loop when it says so.
    public func serve(signals: Int32, onSignal: (Int32) -> Bool) {
        let filter: DBusHandleMessageFunction = { _, message, data in
            guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            Unmanaged<Provider>.fromOpaque(data).takeUnretainedValue().handle(message)
            return DBUS_HANDLER_RESULT_HANDLED
        }
        dbus_connection_add_filter(connection, filter, Unmanaged.passUnretained(self).toOpaque(), nil)
        defer { dbus_connection_remove_filter(connection, filter, Unmanaged.passUnretained(self).toOpaque()) }
        var busFD: Int32 = -1
        dbus_connection_get_unix_fd(connection, &busFD)
        while stopReason == nil {
            while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS && stopReason == nil {}
            dbus_connection_flush(connection)
            if dbus_connection_get_is_connected(connection) == 0 {
                stopReason = "the session bus went away"
                break
            }
            if stopReason != nil { break }
            while logind?.hasQueued == true { serviceLogind() }
            var fds = [pollfd(fd: busFD, events: Int16(POLLIN), revents: 0), pollfd(fd: signals, events: Int16(POLLIN), revents: 0)]
            let watched = prompts.values.compactMap { prompt in prompt.descriptor.map { (prompt, $0) } }
            for (_, fd) in watched { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            if let fd = logind?.descriptor { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            // Interrupted: as if nothing were ready; the loop looks again.
            let ready = valueOrErrno("poll", retryOnInterrupt: false) { poll(&fds, nfds_t(fds.count), promptTimeoutMilliseconds()) }
            if let failure = ready.error, failure.code != EINTR { stopReason = "poll failed: \(failure)"; break }
            if fds[1].revents != 0 {
                var sent: Int32 = 0
                while case let signal = locket_signalfd_next(signals, &sent), signal != 0 {
                    if onSignal(signal) { stopReason = stopReason ?? "stopped by signal \(signal)" }
                }
            }
            for (k, (prompt, _)) in watched.enumerated() where fds[2 + k].revents != 0 { promptReadable(prompt) }
            if fds.count > 2 + watched.count, fds[2 + watched.count].revents != 0 { serviceLogind() }
            expirePrompts()
            if fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                if dbus_connection_read_write(connection, 0) == 0 {
                    stopReason = "the session bus went away"
                }
            }
        }
    }

    /// Why the loop ended, for the exit message.
    public var stopped: String { stopReason ?? "stopped" }

    func newID() -> String {
        nextID += 1
        return String(nextID)
    }

    // MARK: - Sending

    /// Sends `message` and releases it (a signal emitted while a call is
    /// answered waits for the call's reply).
    func send(_ message: OpaquePointer, now: Bool = false) {
        if !now, held != nil {
            held!.append(message)
            return
        }
        dbus_connection_send(connection, message, nil)
        dbus_message_unref(message)
    }

    /// org.freedesktop.DBus.Properties.PropertiesChanged, naming the changed
    /// properties as invalidated (a client reads them again when it wants them).
    func propertiesChanged(_ path: String, _ interface: String, _ names: [String]) {
        emit(path, Provider.propertiesInterface, "PropertiesChanged") { out in
            out.string(interface)
            out.container(DBusType.array, "{sv}") { _ in }
            out.container(DBusType.array, "s") { array in for name in names { array.string(name) } }
        }
    }

    /// Sends the signals held while a call was answered.
    func releaseHeld() {
        let messages = held ?? []
        held = nil
        for message in messages { send(message, now: true) }
    }

    /// A signal from `path`; `destination` makes it unicast (a prompt's
    /// Completed goes to its client alone, which go-keyring relies on: it
    /// never adds a match rule).
    func emit(_ path: String, _ interface: String, _ member: String, destination: String? = nil, _ body: (inout MessageWriter) -> Void) {
        guard let signal = dbus_message_new_signal(path, interface, member) else { return }
        if let destination { dbus_message_set_destination(signal, destination) }
        var writer = MessageWriter(signal)
        body(&writer)
        send(signal)
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
