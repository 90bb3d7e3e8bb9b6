import CDBus
import Glibc
import LocketCore
import LocketSupport

/// A secret on its way to a client.
struct Secret {
    let value: SecureBytes
    let contentType: String
}

/// Every request opens its keychain here: a new `Keychain` (the session's
/// keys as they are now, so `locket lock` in a shell is seen at once) whose
/// file is released when the call returns.
extension Provider {
    /// The default content type of a secret whose writer gave none (libsecret's).
    static let defaultContentType = "text/plain"

    /// The file stays open for the call that follows at once (one opening
    /// and schema parse per request instead of two: they were most of a
    /// GetSecret's time); every caller makes its call or releases the file
    /// before anything that waits.
    func open(_ collection: Collection, _ client: ClientIdentity) throws -> Keychain {
        do {
            if let session = collection.session {
                try SessionCollection.prepare(session, keychainPath: collection.keychainPath)
                return try Keychain.open(at: collection.keychainPath, caller: client.caller, environment: session.environment, keepsFileOpen: true)
            }
            return try Keychain.open(at: collection.keychainPath, caller: client.caller, environment: environment, keepsFileOpen: true)
        } catch let error as KeychainError where error.code == .noSuchKeychain {
            throw BusError.noSuchObject("the keychain \(collection.keychainPath) does not exist")
        }
    }

    /// Items of the collection that `query` matches (generic passwords the
    /// caller may see), locked ones included with their availability.
    func items(_ collection: Collection, _ query: Query, _ client: ClientIdentity) throws -> [Item] {
        let keychain = try open(collection, client)
        defer { keychain.releaseFile() }
        return try keychain.matching(query)
    }

    /// The path of each generic password of the collection the caller may
    /// see, `element` of its reference; nothing opened, no item kept (a
    /// list of 10,000 items held 10,000 `Item`s at once, the provider's peak).
    func itemPaths(_ collection: Collection, _ client: ClientIdentity, element: ([UInt8]) -> String) throws -> [String] {
        let keychain = try open(collection, client)
        defer { keychain.releaseFile() }
        var paths: [String] = []
        try keychain.forEachMatch(Query(itemClass: .genericPassword), opening: false) { paths.append(element($0.persistentRef)) }
        return paths
    }

    /// The item `ref` of the collection, without its secret; NoSuchObject when it is not there (or not the caller's).
    func item(_ collection: Collection, ref: [UInt8], _ client: ClientIdentity) throws -> Item {
        var query = Query(itemClass: .genericPassword)
        query.persistentRef = ref
        guard let item = try items(collection, query, client).first else {
            throw BusError.noSuchObject("no item \(Hex.encodeRef(ref)) in \(collection.name)")
        }
        return item
    }

    /// The item's secret; IsLocked while its protection class is locked
    /// (or it needs a proof of presence, which only a prompt can give).
    func secret(_ collection: Collection, ref: [UInt8], _ call: Call) throws -> Secret {
        let keychain = try open(collection, call.client)
        defer { keychain.releaseFile() }
        var query = Query(itemClass: .genericPassword)
        query.persistentRef = ref
        do {
            guard let item = try keychain.search(query, returnData: true).first, let data = item.data else {
                throw BusError.noSuchObject("no item \(Hex.encodeRef(ref)) in \(collection.name)")
            }
            return Secret(value: data, contentType: item.freeForm.contentType ?? Provider.defaultContentType)
        } catch let error as KeychainError where error.code == .itemNotFound {
            throw BusError.noSuchObject("no item \(Hex.encodeRef(ref)) in \(collection.name)")
        }
    }

    /// Whether the collection is locked for this caller: its when-unlocked
    /// keys are not in the session (a keychain without a password never is).
    func isLocked(_ collection: Collection, _ client: ClientIdentity) -> Bool {
        guard let keychain = try? open(collection, client) else { return true }
        defer { keychain.releaseFile() }
        return keychain.hasPassword && !keychain.session.isUnlocked
    }

    /// Writes `secret` as the API's Secret struct `(oayays)`, encrypted for
    /// the session at `sessionPath` (a plain session's value goes from the
    /// guarded buffer straight into the message).
    static func write(_ secret: Secret, session: TransferSession, sessionPath: String, _ out: inout MessageWriter) throws {
        let encoded = try session.encode(secret.value)
        out.container(DBusType.structure, nil) { fields in
            fields.objectPath(sessionPath)
            fields.bytes(encoded.parameters)
            if session.algorithm == .plain {
                secret.value.withUnsafeBytes { fields.bytes($0) }
            } else {
                fields.bytes(encoded.value)
            }
            fields.string(secret.contentType)
        }
    }

    /// Reads a Secret struct `(oayays)` sent by the caller, decrypted with its session.
    func readSecret(_ reader: inout MessageReader, _ call: Call) throws -> Secret {
        var fields = try reader.container(DBusType.structure, "a secret (oayays)")
        let session = try self.session(try fields.objectPath(), call)
        let parameters = try fields.bytes()
        var value = try fields.bytes()
        defer { wipe(&value) }
        let contentType = try fields.string()
        guard value.count <= Keychain.maximumDataLength + 32 else {
            throw BusError.invalidArgs("the secret is larger than \(Keychain.maximumDataLength / 1024 / 1024) MiB")
        }
        return Secret(value: try session.decode(parameters: parameters, value: value), contentType: contentType)
    }
}
