import CDBus
import Glibc
import LocketCore
import LocketSupport

/// Who a client is: its uid and process as the bus daemon saw them when it
/// connected, and the locket caller it gets (the owner, or an app limited to
/// its access groups by the executable map).
struct ClientIdentity {
    let uid: UInt32
    let pid: UInt32?
    /// `/proc/PID/exe` when the executable map is in use.
    let executable: String?
    let caller: Caller
}

/// One entry of the executable map, with its entitlements read at start-up
/// (a bad file stops the provider before it serves, as it stops any command).
struct AppEntry {
    let executable: String
    let entitlements: Entitlements
}

extension Provider {
    /// The identity of `sender`, asked of the bus daemon once per client
    /// (GetConnectionCredentials) and kept until it leaves the bus. Another
    /// user's process is refused (AccessDenied): a session bus normally
    /// admits only its user, but one configured to allow others (or anonymous
    /// connections) must not hand them this user's secrets.
    func identify(_ sender: String) throws -> ClientIdentity {
        if let known = callers[sender] { return known }
        guard sender != "org.freedesktop.DBus" else { throw BusError.accessDenied("the bus daemon makes no calls here") }
        let (uid, pid) = try credentials(of: sender)
        guard let uid, uid == getuid() else {
            log("refused \(sender): uid \(uid.map(String.init) ?? "unknown") is not this user's (\(getuid()))")
            throw BusError.accessDenied("only processes of uid \(getuid()) may use this Secret Service")
        }
        var executable: String?
        var caller = defaultCaller
        if !apps.isEmpty, let pid {
            executable = Provider.executable(of: pid, uid: uid)
            if let executable, let app = apps.first(where: { $0.executable == executable }) { caller = .app(app.entitlements) }
        }
        let identity = ClientIdentity(uid: uid, pid: pid, executable: executable, caller: caller)
        callers[sender] = identity
        return identity
    }

    /// (UnixUserID, ProcessID) of a connection, from the bus daemon.
    private func credentials(of sender: String) throws -> (UInt32?, UInt32?) {
        guard let request = dbus_message_new_method_call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                                         "GetConnectionCredentials") else { throw BusError.failed("out of memory") }
        defer { dbus_message_unref(request) }
        var writer = MessageWriter(request)
        writer.string(sender)
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let reply = dbus_connection_send_with_reply_and_block(connection, request, 5_000, &error) else {
            throw BusError.accessDenied("the bus did not say who \(sender) is: \(Provider.text(error))")
        }
        defer { dbus_message_unref(reply) }
        var reader = MessageReader(reply)
        var uid: UInt32?, pid: UInt32?
        for (name, var value) in try reader.variantDictionary() where name == "UnixUserID" || name == "ProcessID" {
            guard value.nextType == DBusType.uint32 else { continue }
            let number = try value.uint32()
            if name == "UnixUserID" { uid = number } else { pid = number }
        }
        return (uid, pid)
    }

    /// The executable of process `pid`, if that process still belongs to
    /// `uid` (a pid reused by another user's process maps to nothing).
    static func executable(of pid: UInt32, uid: UInt32) -> String? {
        var info = stat()
        guard stat("/proc/\(pid)", &info) == 0, info.st_uid == uid, let path = readLink("/proc/\(pid)/exe") else { return nil }
        // An executable replaced while running reads "PATH (deleted)": not the file mapped.
        return path.hasSuffix(" (deleted)") ? nil : path
    }
}

extension Provider {
    /// "`:1.4` (pid 1234, /usr/bin/gnome-keyring-daemon)": who owns `name`, for the refusal to start.
    func describeOwner(of name: String) -> String {
        guard let owner = busCall("GetNameOwner", name, { try $0.string() }) else { return "another process" }
        guard let pid = busCall("GetConnectionUnixProcessID", owner, { try $0.uint32() }) else { return owner }
        let executable = readLink("/proc/\(pid)/exe")
        return "\(owner) (pid \(pid)\(executable.map { ", \($0)" } ?? ""))"
    }

    /// A call to the bus daemon with one string argument, its first result read by `read`; nil on failure.
    private func busCall<T>(_ method: String, _ argument: String, _ read: (inout MessageReader) throws -> T) -> T? {
        guard let request = dbus_message_new_method_call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", method) else {
            return nil
        }
        defer { dbus_message_unref(request) }
        var writer = MessageWriter(request)
        writer.string(argument)
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let reply = dbus_connection_send_with_reply_and_block(connection, request, 5_000, &error) else { return nil }
        defer { dbus_message_unref(reply) }
        var reader = MessageReader(reply)
        return try? read(&reader)
    }
}
