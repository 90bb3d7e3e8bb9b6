import CDBus
import Glibc
import LocketCore
import LocketSupport

/// The provider's ear on logind (SPEC §20), on the system bus: the session's
/// screen locking (`Session.Lock`, or its `LockedHint` turning true) and the
/// machine about to sleep (`Manager.PrepareForSleep(true)`), for this user's
/// sessions only. Before sleep, logind waits for the delay inhibitor held
/// here, which is let go once the keychains are locked (and taken again on
/// wake-up), so they are locked before the machine sleeps, not after.
///
/// The loop polls `descriptor`; `service()` reads what came and returns the
/// events, which the provider acts on (Provider+Logind). Signals are taken
/// only from logind's current unique name. With no system bus, or no logind
/// on it, it says so once; logind appearing later is picked up.
final class Logind {
    enum Event: Equatable {
        case sleep
        case screenLock(session: String)
    }

    static let name = "org.freedesktop.login1"
    static let path = "/org/freedesktop/login1"
    static let manager = "org.freedesktop.login1.Manager"
    static let session = "org.freedesktop.login1.Session"

    private let connection: OpaquePointer
    private let log: (String) -> Void
    /// logind's unique name while it is on the bus.
    private var owner: String?
    /// This user's sessions (object paths), as ListSessions last said.
    private var sessions: Set<String> = []
    /// The delay inhibitor for sleep; -1 when none is held.
    private var inhibitor: Int32 = -1
    /// What the filter saw, for `service` to sort out after dispatching.
    private var pending: [(member: String, path: String, message: OpaquePointer)] = []

    /// Connects to the system bus (DBUS_SYSTEM_BUS_ADDRESS, else the
    /// standard socket); nil when there is none, said once through `log`.
    static func connect(log: @escaping (String) -> Void) -> Logind? {
        let address = ((try? Environment.process["DBUS_SYSTEM_BUS_ADDRESS"]) ?? nil).flatMap { $0.isEmpty ? nil : $0 }
            ?? "unix:path=/run/dbus/system_bus_socket"
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let connection = dbus_connection_open_private(address, &error) else {
            log("no system bus at \(address) (\(Provider.text(error))): the keychains will not lock with the screen or before sleep")
            return nil
        }
        guard dbus_bus_register(connection, &error) != 0 else {
            log("cannot register with the system bus (\(Provider.text(error))): the keychains will not lock with the screen or before sleep")
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            return nil
        }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        return Logind(connection: connection, log: log)
    }

    private init(connection: OpaquePointer, log: @escaping (String) -> Void) {
        self.connection = connection
        self.log = log
        let filter: DBusHandleMessageFunction = { _, message, data in
            guard let message, let data, dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_SIGNAL else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            let logind = Unmanaged<Logind>.fromOpaque(data).takeUnretainedValue()
            let member = dbus_message_get_member(message).map { String(cString: $0) } ?? ""
            let path = dbus_message_get_path(message).map { String(cString: $0) } ?? ""
            dbus_message_ref(message)
            logind.pending.append((member, path, message))
            return DBUS_HANDLER_RESULT_HANDLED
        }
        dbus_connection_add_filter(connection, filter, Unmanaged.passUnretained(self).toOpaque(), nil)
        for rule in ["type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Logind.name)'",
                     "type='signal',sender='\(Logind.name)',interface='\(Logind.manager)',member='PrepareForSleep'",
                     "type='signal',sender='\(Logind.name)',interface='\(Logind.manager)',member='SessionNew'",
                     "type='signal',sender='\(Logind.name)',interface='\(Logind.session)',member='Lock'",
                     "type='signal',sender='\(Logind.name)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',arg0='\(Logind.session)'"] {
            dbus_bus_add_match(connection, rule, nil)
        }
        owner = uniqueOwner()
        if owner == nil {
            log("logind is not on the system bus: the keychains will not lock with the screen or before sleep until it is")
        } else {
            started()
        }
    }

    deinit {
        if inhibitor >= 0 { close(inhibitor) }
        for event in pending { dbus_message_unref(event.message) }
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }

    /// The system bus connection's descriptor, for the loop's poll.
    var descriptor: Int32 {
        var fd: Int32 = -1
        dbus_connection_get_unix_fd(connection, &fd)
        return fd
    }

    /// Whether messages wait in libdbus's queue (read during a blocking call), unseen by poll.
    var hasQueued: Bool { dbus_connection_get_dispatch_status(connection) == DBUS_DISPATCH_DATA_REMAINS }

    /// Reads and dispatches what came; the events for the provider. nil
    /// once the system bus went away (the provider goes on without it).
    func service() -> [Event]? {
        if dbus_connection_read_write(connection, 0) == 0 || dbus_connection_get_is_connected(connection) == 0 {
            log("the system bus went away: the keychains no longer lock with the screen or before sleep")
            return nil
        }
        while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
        let seen = pending
        pending = []
        var events: [Event] = []
        for (member, path, message) in seen {
            defer { dbus_message_unref(message) }
            let sender = dbus_message_get_sender(message).map { String(cString: $0) }
            var reader = MessageReader(message)
            if member == "NameOwnerChanged" {
                guard sender == "org.freedesktop.DBus", (try? reader.string()) == Logind.name, let _ = try? reader.string(),
                      let newOwner = try? reader.string() else { continue }
                owner = newOwner.isEmpty ? nil : newOwner
                if owner == nil {
                    log("logind left the system bus: the keychains no longer lock with the screen or before sleep")
                    if inhibitor >= 0 { close(inhibitor); inhibitor = -1 }
                } else {
                    log("logind is on the system bus: the keychains lock with the screen and before sleep")
                    started()
                }
                continue
            }
            // Only logind itself speaks for logind.
            guard let owner, sender == owner else { continue }
            switch member {
            case "PrepareForSleep":
                guard let sleeping = try? reader.boolean() else { continue }
                if sleeping {
                    events.append(.sleep)
                } else {
                    takeInhibitor()
                }
            case "SessionNew":
                refreshSessions()
            case "Lock":
                if isOurs(path) { events.append(.screenLock(session: path)) }
            case "PropertiesChanged":
                guard (try? reader.string()) == Logind.session, let changed = try? reader.variantDictionary(),
                      var hint = changed["LockedHint"], (try? hint.boolean()) == true, isOurs(path) else { continue }
                events.append(.screenLock(session: path))
            default:
                break
            }
        }
        return events
    }

    /// After the keychains were locked for sleep: logind may go on.
    func releaseInhibitor() {
        if inhibitor >= 0 { close(inhibitor) }
        inhibitor = -1
    }

    private func started() {
        refreshSessions()
        takeInhibitor()
    }

    private func isOurs(_ path: String) -> Bool {
        if sessions.contains(path) { return true }
        // A session made since (SessionNew may have come first, or not at all).
        refreshSessions()
        return sessions.contains(path)
    }

    private func uniqueOwner() -> String? {
        guard var reply = BlockingCall(bus: connection, "GetNameOwner", { $0.string(Logind.name) }) else { return nil }
        defer { reply.release() }
        return try? reply.reader.string()
    }

    private func refreshSessions() {
        guard var reply = BlockingCall(connection, destination: Logind.name, path: Logind.path, interface: Logind.manager, member: "ListSessions") else { return }
        defer { reply.release() }
        guard var list = try? reply.reader.container(DBusType.array, "a(susso)") else { return }
        var ours: Set<String> = []
        while list.nextType == DBusType.structure {
            guard var entry = try? list.container(DBusType.structure, "(susso)"), let _ = try? entry.string(), let uid = try? entry.uint32(),
                  let _ = try? entry.string(), let _ = try? entry.string(), let path = try? entry.objectPath() else { return }
            if uid == getuid() { ours.insert(path) }
        }
        sessions = ours
    }

    /// A delay inhibitor for sleep, so that PrepareForSleep(true) is answered
    /// (the keychains locked) before the machine sleeps.
    private func takeInhibitor() {
        guard inhibitor < 0 else { return }
        guard var reply = BlockingCall(connection, destination: Logind.name, path: Logind.path, interface: Logind.manager, member: "Inhibit", { out in
            out.string("sleep")
            out.string("locket")
            out.string("Lock the keychains before sleep")
            out.string("delay")
        }) else {
            log("logind gave no sleep inhibitor: the keychains lock when the machine sleeps, possibly only after it wakes")
            return
        }
        defer { reply.release() }
        if let fd = try? reply.reader.unixFD() { inhibitor = fd }
    }
}
