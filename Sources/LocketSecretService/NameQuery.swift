import CDBus
import Glibc
import LocketCore
import LocketSupport

/// `locket-secret-service --query [--reload]`: what `locket secret-service
/// status` asks the session bus (locket itself links no D-Bus), printed as
/// `key=value` lines for it to read: `bus=`, then `owner=` (the unique name
/// owning org.freedesktop.secrets, empty for none), `pid=`, `executable=`
/// and `activatable=yes|no`; or `error=` when there is no bus to ask.
/// `--reload` (enable, disable) first asks the bus to read its service
/// directories again (ReloadConfig): a bus that started before the user's
/// directory existed would go on starting gnome-keyring from its old list.
enum NameQuery {
    static func run(reload: Bool) -> Int32 {
        var lines: [String] = []
        defer {
            let text = lines.map { $0 + "\n" }.joined(with: "")
            _ = text.withCString { write(1, $0, strlen($0)) }
        }
        guard let address = sessionBusAddress() else {
            lines.append("error=no session bus (DBUS_SESSION_BUS_ADDRESS is not set, and there is no $XDG_RUNTIME_DIR/bus)")
            return 0
        }
        lines.append("bus=\(address)")
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let connection = dbus_connection_open_private(address, &error) else {
            lines.append("error=cannot connect to the session bus: \(Provider.text(error))")
            return 0
        }
        defer {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
        }
        guard dbus_bus_register(connection, &error) != 0 else {
            lines.append("error=cannot register with the session bus: \(Provider.text(error))")
            return 0
        }
        if reload {
            let reloaded = BlockingCall(bus: connection, "ReloadConfig")
            reloaded?.release()
            lines.append("reloaded=\(reloaded != nil ? "yes" : "no")")
        }
        var ownerReply = BlockingCall(bus: connection, "GetNameOwner") { $0.string(Provider.busName) }
        defer { ownerReply?.release() }
        let owner = try? ownerReply?.reader.string()
        lines.append("owner=\(owner ?? "")")
        var pidReply = owner.flatMap { owner in BlockingCall(bus: connection, "GetConnectionUnixProcessID") { $0.string(owner) } }
        defer { pidReply?.release() }
        if let pid = try? pidReply?.reader.uint32() {
            lines.append("pid=\(pid)")
            if let executable = readLink("/proc/\(pid)/exe") { lines.append("executable=\(executable)") }
        }
        var activatable = false
        if var names = BlockingCall(bus: connection, "ListActivatableNames") {
            defer { names.release() }
            if var array = try? names.reader.container(DBusType.array, "an array of names") {
                while array.nextType == DBusType.string {
                    if (try? array.string()) == Provider.busName { activatable = true }
                }
            }
        }
        lines.append("activatable=\(activatable ? "yes" : "no")")
        return 0
    }

    /// DBUS_SESSION_BUS_ADDRESS, else the bus that activated this process
    /// (DBUS_STARTER_ADDRESS, when it is a session bus), else systemd's user
    /// bus at `$XDG_RUNTIME_DIR/bus` (as libdbus finds it).
    static func sessionBusAddress() -> String? {
        func variable(_ name: String) -> String? { ((try? Environment.process[name]) ?? nil).flatMap { $0.isEmpty ? nil : $0 } }
        if let address = variable("DBUS_SESSION_BUS_ADDRESS") { return address }
        if variable("DBUS_STARTER_BUS_TYPE") == "session", let address = variable("DBUS_STARTER_ADDRESS") { return address }
        guard let runtime = (try? Environment.process["XDG_RUNTIME_DIR"]) ?? nil, runtime.hasPrefix("/") else { return nil }
        var st = stat()
        guard stat(runtime + "/bus", &st) == 0, st.st_mode & S_IFMT == S_IFSOCK else { return nil }
        return "unix:path=" + runtime + "/bus"
    }
}
