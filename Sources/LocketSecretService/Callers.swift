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
    /// The client its sessions, prompts and calls count to (Limits): its
    /// process, so that one program's many connections are one client.
    let account: String
}

/// A GetConnectionCredentials in flight: whom it is about, for the answer.
final class IdentityRequest {
    weak var provider: Provider?
    let sender: String
    init(_ provider: Provider, _ sender: String) {
        self.provider = provider
        self.sender = sender
    }
}

/// One entry of the executable map, with its entitlements read at start-up
/// (a bad file stops the provider before it serves, as it stops any command).
struct AppEntry {
    let executable: String
    let entitlements: Entitlements
}

extension Provider {
    /// The identity of `sender`, as the bus daemon gave it (`identified`);
    /// a client it refused, or one it could not name, is AccessDenied.
    func identify(_ sender: String) throws -> ClientIdentity {
        if let known = callers[sender] { return known }
        throw BusError.accessDenied(refusedCallers[sender] ?? "the bus daemon makes no calls here")
    }

    /// Whether `sender`'s calls must wait for its identity: the first call
    /// of a client asks the bus daemon who it is (GetConnectionCredentials),
    /// without waiting for the answer, and its calls stay in their queue
    /// until `identified` has it. Waiting in place was a stall: the answer
    /// comes behind every message the daemon holds for the provider, and a
    /// flood of new connections kept the provider waiting on each in turn.
    func awaitsIdentity(_ sender: String) -> Bool {
        guard callers[sender] == nil, refusedCallers[sender] == nil, !sender.isEmpty, sender != "org.freedesktop.DBus" else { return false }
        if identifying[sender] != nil { return true }
        guard let request = dbus_message_new_method_call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                                         "GetConnectionCredentials") else { return false }
        defer { dbus_message_unref(request) }
        var writer = MessageWriter(request)
        writer.string(sender)
        var pending: OpaquePointer?
        guard writer.ok, dbus_connection_send_with_reply(identityConnection, request, &pending, Int32.max) != 0, let pending else {
            refusedCallers[sender] = "the bus did not say who \(sender) is"
            return false
        }
        defer { dbus_pending_call_unref(pending) }
        let context = Unmanaged.passRetained(IdentityRequest(self, sender)).toOpaque()
        let notified = dbus_pending_call_set_notify(pending, { pending, context in
            guard let pending, let context else { return }
            let request = Unmanaged<IdentityRequest>.fromOpaque(context).takeUnretainedValue()
            guard let reply = dbus_pending_call_steal_reply(pending) else { return }
            defer { dbus_message_unref(reply) }
            request.provider?.identified(request.sender, reply)
        }, context, { context in
            if let context { Unmanaged<IdentityRequest>.fromOpaque(context).release() }
        })
        guard notified != 0 else {
            Unmanaged<IdentityRequest>.fromOpaque(context).release()
            dbus_pending_call_cancel(pending)
            refusedCallers[sender] = "the bus did not say who \(sender) is"
            return false
        }
        identifying[sender] = Prompt.now()
        dbus_connection_flush(identityConnection)
        return true
    }

    /// Reads what the bus daemon answered about new clients (`identified`
    /// runs as each answer is dispatched).
    func readIdentities() {
        guard !identifying.isEmpty else { return }
        _ = dbus_connection_read_write(identityConnection, 0)
        while dbus_connection_dispatch(identityConnection) == DBUS_DISPATCH_DATA_REMAINS {}
        // An answer that never comes must not hold a client's calls (nor the bus) for good.
        let now = Prompt.now()
        for (sender, asked) in identifying where now - asked >= Limits.identityWait {
            identifying[sender] = nil
            refusedCallers[sender] = "the bus did not say who \(sender) is in \(Limits.identityWait) s"
            calls.release(sender, account: sender)
        }
    }

    /// The bus daemon's answer about `sender`: its identity, or a refusal.
    /// Another user's process is refused (AccessDenied): a session bus
    /// normally admits only its user, but one configured to allow others
    /// (or anonymous connections) must not hand them this user's secrets.
    /// Its calls are answered from now on, in turn with the others'.
    func identified(_ sender: String, _ reply: OpaquePointer) {
        // It left the bus meanwhile: its calls went with it.
        guard identifying.removeValue(forKey: sender) != nil else { return }
        defer { calls.release(sender, account: callers[sender]?.account ?? sender) }
        var uid: UInt32?, pid: UInt32?
        if dbus_message_get_type(reply) == DBUS_MESSAGE_TYPE_METHOD_RETURN {
            var reader = MessageReader(reply)
            for (name, var value) in (try? reader.variantDictionary()) ?? [:] where name == "UnixUserID" || name == "ProcessID" {
                guard value.nextType == DBusType.uint32, let number = try? value.uint32() else { continue }
                if name == "UnixUserID" { uid = number } else { pid = number }
            }
        }
        guard let uid, uid == getuid() else {
            log("refused \(sender): uid \(uid.map(String.init) ?? "unknown") is not this user's (\(getuid()))")
            refusedCallers[sender] = "only processes of uid \(getuid()) may use this Secret Service"
            return
        }
        var executable: String?
        var caller = defaultCaller
        if !apps.isEmpty, let pid {
            executable = Provider.executable(of: pid, uid: uid)
            if let executable, let app = apps.first(where: { $0.executable == executable }) { caller = .app(app.entitlements) }
        }
        callers[sender] = ClientIdentity(uid: uid, pid: pid, executable: executable, caller: caller, account: pid.map { "pid \($0)" } ?? sender)
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
