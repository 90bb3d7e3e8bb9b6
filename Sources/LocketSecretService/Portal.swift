import CCrypto
import CDBus
import Glibc
import LocketCore
import LocketSupport

/// The secret portal's backend (SPEC §20, issue 41): org.freedesktop.impl.portal.Secret
/// at /org/freedesktop/portal/desktop, on the provider's own bus name, as
/// gnome-keyring serves it. xdg-desktop-portal calls it for a sandboxed app
/// (a Flatpak) that asked org.freedesktop.portal.Secret.RetrieveSecret, with
/// the app's ID as the portal identified it and the write end of the app's
/// pipe; the backend writes the app's secret there.
///
/// An app's secret is 64 random bytes made at its first request and kept as
/// an item of the default collection (the login keychain), sealed as every
/// item is, with gnome-keyring's attributes (`app_id`, `xdg:schema`
/// org.freedesktop.portal.Secret) and label, so `secret-tool` and `locket
/// find --attr app_id=ID` see it and a keyring moved from gnome-keyring
/// keeps each app's secret.
enum Portal {
    static let path = "/org/freedesktop/portal/desktop"
    static let interface = "org.freedesktop.impl.portal.Secret"
    static let requestInterface = "org.freedesktop.impl.portal.Request"
    /// The handles xdg-desktop-portal gives: a Request object at each while its call is answered.
    static let requestPrefix = path + "/request/"
    static let version: UInt32 = 1
    static let schema = "org.freedesktop.portal.Secret"
    /// gnome-keyring's PORTAL_DEFAULT_KEY_SIZE.
    static let secretLength = 64
    /// Longer IDs are refused (a D-Bus name's limit; Flatpak's IDs are far shorter).
    static let maximumAppIDLength = 255

    /// The token xdg-desktop-portal puts in a request's handle when its
    /// client gave none (`handle_token`): a client that can't know the handle
    /// before the reply subscribes to the Response signal only after it.
    static let tokenOfNone = "t"
    /// How long the answer to such a request is held back. The portal sends
    /// Response as soon as the backend answers, and a client still busy with
    /// the reply misses it and waits for ever: libsecret before 0.21
    /// (Debian 12's 0.20.5) does, inside every Flatpak, with gnome-keyring as
    /// with locket (xdg-desktop-portal issue 116). 250 ms is ten times the
    /// longest such gap measured on a machine at load 13; a client that gives a
    /// token (Chromium, libsecret since) is answered at once.
    static let lateSubscriberDelay = 0.25

    /// Whether the client of the request at `handle` subscribes to its Response only after the reply.
    static func subscribesLate(_ handle: String) -> Bool { handle.hasSuffix("/" + tokenOfNone) }

    /// Seconds on the monotonic clock.
    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// org.freedesktop.portal.Request's response codes, which the backend's reply carries.
    enum Response: UInt32 {
        case success = 0
        case cancelled = 1
        case other = 2
    }

    /// The item of `appID`'s secret, as gnome-keyring finds it (plus the schema, so
    /// an item of another program that happens to have an `app_id` attribute is not taken).
    static func query(appID: String) -> Query {
        var query = Query(itemClass: .genericPassword)
        query.match(freeForm: "app_id", appID)
        query.match(freeForm: "xdg:schema", schema)
        return query
    }

    /// A new app's secret, as an item to add.
    static func newItem(appID: String) -> NewItem {
        var item = NewItem(itemClass: .genericPassword)
        item.set(label: "Application key for \(appID)")
        item.freeForm = FreeForm(attributes: ["app_id": appID, "xdg:schema": schema], contentType: "application/octet-stream",
                                 uniqueByReference: true)
        return item
    }

    /// 64 bytes from OpenSSL's private generator, in guarded memory.
    static func randomSecret() throws -> SecureBytes {
        let secret = try SecureBytes(count: secretLength)
        try secret.withUnsafeMutableBytes { buffer in
            guard RAND_priv_bytes(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(buffer.count)) == 1 else {
                throw BusError.failed("no random bytes")
            }
        }
        return secret
    }

    /// Writes the whole secret to the app's descriptor without ever waiting:
    /// the loop serves every client, so a descriptor that is not writable now
    /// (a full pipe, a socket nobody reads) fails the request instead. 64
    /// bytes is under PIPE_BUF, so a pipe that polls writable takes them whole.
    static func write(_ secret: SecureBytes, to fd: Int32) -> Bool {
        var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        guard poll(&ready, 1, 0) == 1, ready.revents & Int16(POLLOUT) != 0, ready.revents & Int16(POLLERR | POLLHUP | POLLNVAL) == 0 else {
            return false
        }
        return secret.withUnsafeBytes { bytes in
            if case .success = writeAll(fd, bytes) { return true }
            return false
        }
    }
}

/// A RetrieveSecret waiting for its keychain to be unlocked: the call,
/// answered when the prompt ends, and the app's descriptor.
final class PortalRequest {
    let handle: String
    let appID: String
    /// The caller (xdg-desktop-portal) and who it is.
    let owner: String
    let client: ClientIdentity
    let collection: Provider.Collection
    /// The method call, referenced until it is answered.
    private(set) var message: OpaquePointer?
    private(set) var fd: Int32
    /// The unlock prompt it waits for.
    let prompt: Prompt
    /// When the call came (Portal.now()).
    let received: Double

    init(handle: String, appID: String, call: Call, collection: Provider.Collection, fd: Int32, prompt: Prompt, received: Double) {
        self.handle = handle
        self.appID = appID
        owner = call.sender
        client = call.client
        self.collection = collection
        message = dbus_message_ref(call.message)
        self.fd = fd
        self.prompt = prompt
        self.received = received
    }

    /// Lets go of the call and the descriptor (after the answer, or unanswered).
    func release() {
        if let message { dbus_message_unref(message) }
        message = nil
        if fd >= 0 { close(fd) }
        fd = -1
    }

    deinit { release() }
}

/// Thrown by a call answered later (a RetrieveSecret waiting for a prompt):
/// the dispatcher sends no reply now.
struct ReplyLater: Error {}
