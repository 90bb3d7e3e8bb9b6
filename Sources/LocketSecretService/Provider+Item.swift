import CDBus
import Glibc
import LocketCore
import LocketSupport

/// org.freedesktop.Secret.Item: a generic password.
extension Provider {
    static let itemProperties = ["Locked", "Attributes", "Label", "Type", "Created", "Modified"]

    func itemCall(_ call: Call, _ collection: Collection, ref: [UInt8], _ out: inout MessageWriter) throws {
        let path = ObjectPath.item(collection.path, ref: ref)
        if call.interface == Provider.propertiesInterface {
            return try properties(call, &out, interface: Provider.itemInterface, names: Provider.itemProperties, get: { name in
                try self.itemProperty(name, try self.item(collection, ref: ref, call.client))
            }, set: { name, value in
                try self.setItemProperty(name, &value, collection, ref: ref, call)
                self.emit(collection.path, Provider.collectionInterface, "ItemChanged") { $0.objectPath(path) }
                self.propertiesChanged(path, Provider.itemInterface, name == "Type" ? ["Type", "Attributes"] : name == "Attributes" ? ["Attributes", "Type"] : [name])
            })
        }
        guard call.interface.isEmpty || call.interface == Provider.itemInterface else {
            throw BusError.unknownMethod("no interface \(call.interface) at \(call.path)")
        }
        var args = MessageReader(call.message)
        switch call.member {
        case "GetSecret":
            let sessionPath = try args.objectPath()
            let session = try self.session(sessionPath, call)
            try Provider.write(try secret(collection, ref: ref, call), session: session, sessionPath: sessionPath, &out)
        case "SetSecret":
            let secret = try readSecret(&args, call)
            let keychain = try open(collection, call.client)
            defer { keychain.releaseFile() }
            let query = Provider.query(ref)
            guard let item = try keychain.matching(query).first else { throw BusError.noSuchObject("no item at \(path)") }
            guard item.availability == .available else { throw BusError.isLocked() }
            var freeForm = item.freeForm
            freeForm.contentType = secret.contentType
            try keychain.update(query, changes: [:], data: secret.value, freeForm: freeForm)
            emit(collection.path, Provider.collectionInterface, "ItemChanged") { $0.objectPath(path) }
        case "Delete":
            // A locked item is IsLocked, as the API and gnome-keyring have it (`locket delete` needs no key, and still works).
            let keychain = try open(collection, call.client)
            defer { keychain.releaseFile() }
            guard let item = try keychain.matching(Provider.query(ref)).first else { throw BusError.noSuchObject("no item at \(path)") }
            guard item.availability == .available && item.accessControl == nil else { throw BusError.isLocked() }
            do {
                try keychain.delete(Provider.query(ref))
            } catch let error as KeychainError where error.code == .itemNotFound {
                throw BusError.noSuchObject("no item at \(path)")
            }
            emit(collection.path, Provider.collectionInterface, "ItemDeleted") { $0.objectPath(path) }
            out.objectPath(ObjectPath.none)
        default:
            throw BusError.unknownMethod("no method \(call.member) on an item")
        }
    }

    /// The generic password with reference `ref`.
    static func query(_ ref: [UInt8]) -> Query {
        var query = Query(itemClass: .genericPassword)
        query.persistentRef = ref
        return query
    }

    private func itemProperty(_ name: String, _ item: Item) throws -> ((inout MessageWriter) -> Void)? {
        // A locked item's attributes are sealed under its class key: it shows none until unlocked.
        let available = item.availability == .available
        // An item with access control (SPEC §14) needs a proof for every read: always Locked here.
        let locked = !available || item.accessControl != nil
        switch name {
        case "Locked": return { $0.variant("b") { $0.boolean(locked) } }
        case "Attributes":
            let attributes = available ? FreeFormMapping.attributes(of: item) : [:]
            return { $0.variant("a{ss}") { $0.stringDictionary(attributes) } }
        case "Label":
            let label = String(decoding: item[.label], as: UTF8.self)
            return { $0.variant("s") { $0.string(label) } }
        case "Type":
            let type = item.freeForm.attributes["xdg:schema"] ?? ""
            return { $0.variant("s") { $0.string(type) } }
        case "Created", "Modified":
            let milliseconds = name == "Created" ? item.creationDate : item.modificationDate
            return { $0.variant("t") { $0.uint64(UInt64(max(0, milliseconds / 1000))) } }
        default: return nil
        }
    }

    private func setItemProperty(_ name: String, _ value: inout MessageReader, _ collection: Collection, ref: [UInt8], _ call: Call) throws {
        let keychain = try open(collection, call.client)
        defer { keychain.releaseFile() }
        let query = Provider.query(ref)
        guard let item = try keychain.matching(query).first else { throw BusError.noSuchObject("no item \(Hex.encodeRef(ref))") }
        guard item.availability == .available else { throw BusError.isLocked() }
        switch name {
        case "Label":
            try keychain.update(query, changes: [.label: Array(try value.string().utf8)])
        case "Attributes", "Type":
            var attributes = FreeFormMapping.attributes(of: item)
            if name == "Type" {
                let type = try value.string()
                attributes["xdg:schema"] = type.isEmpty ? nil : type
            } else {
                attributes = try value.stringDictionary(limit: FreeForm.maximumCount)
            }
            let (mapped, free) = FreeFormMapping.split(attributes)
            var changes: [Attribute: [UInt8]] = [.service: [], .account: []]
            for (attribute, bytes) in mapped { changes[attribute] = bytes }
            var freeForm = item.freeForm
            freeForm.attributes = free
            freeForm.keepsEmptyMapped = true
            try keychain.update(query, changes: changes, freeForm: freeForm)
        default:
            throw BusError.readOnly("\(name) is read-only")
        }
    }
}
