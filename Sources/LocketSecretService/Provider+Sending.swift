import CDBus

/// What the provider sends besides replies: signals, held while a call is
/// answered so that they follow its reply.
extension Provider {
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

    /// org.freedesktop.DBus.Properties.PropertiesChanged: the properties in
    /// `values` with their new values, the others in `names` as invalidated
    /// (a client reads them again when it wants them).
    func propertiesChanged(_ path: String, _ interface: String, _ names: [String],
                           values: [(String, (inout MessageWriter) -> Void)] = []) {
        emit(path, Provider.propertiesInterface, "PropertiesChanged") { out in
            out.string(interface)
            out.container(DBusType.array, "{sv}") { array in
                for (name, value) in values {
                    array.container(DBusType.dictEntry, nil) { entry in
                        entry.string(name)
                        value(&entry)
                    }
                }
            }
            out.container(DBusType.array, "s") { array in for name in names where !values.contains(where: { $0.0 == name }) { array.string(name) } }
        }
    }

    /// A collection's Locked changed (Lock, or a prompt's Unlock): its
    /// PropertiesChanged with the new value, and the service's CollectionChanged.
    func lockedChanged(_ collection: Collection, locked: Bool) {
        propertiesChanged(collection.path, Provider.collectionInterface, ["Locked"], values: [("Locked", { $0.variant("b") { $0.boolean(locked) } })])
        emit(ObjectPath.service, Provider.serviceInterface, "CollectionChanged") { $0.objectPath(collection.path) }
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
