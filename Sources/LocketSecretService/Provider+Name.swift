import CDBus
import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

/// The bus name the provider serves under.
extension Provider {
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
}
