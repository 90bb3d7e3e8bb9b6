import CDBus
import Glibc

/// A method call whose reply is waited for (two seconds at most): the few
/// the provider makes itself, to the bus daemon and to logind, outside any
/// client's request. The reply is released with `release()`.
struct BlockingCall {
    let reply: OpaquePointer
    var reader: MessageReader

    /// nil for an error reply or none in time.
    init?(_ connection: OpaquePointer, destination: String, path: String, interface: String, member: String,
          milliseconds: Int32 = 2000, _ arguments: (inout MessageWriter) -> Void = { _ in }) {
        guard let message = dbus_message_new_method_call(destination, path, interface, member) else { return nil }
        defer { dbus_message_unref(message) }
        var writer = MessageWriter(message)
        arguments(&writer)
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let reply = dbus_connection_send_with_reply_and_block(connection, message, milliseconds, &error) else { return nil }
        self.reply = reply
        reader = MessageReader(reply)
    }

    /// A method of the bus daemon itself.
    init?(bus connection: OpaquePointer, _ member: String, _ arguments: (inout MessageWriter) -> Void = { _ in }) {
        self.init(connection, destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                  member: member, arguments)
    }

    func release() { dbus_message_unref(reply) }
}
