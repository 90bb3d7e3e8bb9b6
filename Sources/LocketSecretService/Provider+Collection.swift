import CDBus
import Glibc
import LocketCore

/// org.freedesktop.Secret.Collection: a keychain.
extension Provider {
    static let collectionProperties = ["Items", "Label", "Locked", "Created", "Modified"]

    func collectionCall(_ call: Call, _ collection: Collection, _ out: inout MessageWriter) throws {
        if call.interface == Provider.propertiesInterface {
            return try properties(call, &out, interface: Provider.collectionInterface, names: Provider.collectionProperties, get: { name in
                try self.collectionProperty(name, collection, call)
            }, set: { name, value in
                guard name == "Label" else { throw BusError.readOnly("\(name) is read-only") }
                let label = try value.string()
                guard label.utf8.count <= Attribute.maximumValueLength else {
                    throw BusError.invalidArgs("the label is longer than \(Attribute.maximumValueLength) bytes")
                }
                guard !self.isLocked(collection, call.client) else { throw BusError.isLocked("the collection is locked") }
                // The label is this run's name for the keychain; the file keeps its own name.
                collection.label = label
                self.emit(ObjectPath.service, Provider.serviceInterface, "CollectionChanged") { $0.objectPath(collection.path) }
                self.propertiesChanged(collection.path, Provider.collectionInterface, ["Label"])
            })
        }
        guard call.interface.isEmpty || call.interface == Provider.collectionInterface else {
            throw BusError.unknownMethod("no interface \(call.interface) at \(call.path)")
        }
        var args = MessageReader(call.message)
        switch call.member {
        case "SearchItems":
            let attributes = try args.stringDictionary(limit: FreeForm.maximumCount)
            let keychain = try open(collection, call.client)
            defer { keychain.releaseFile() }
            var paths: [String] = []
            try keychain.forEachMatch(try FreeFormMapping.query(attributes)) { item in
                guard item.availability != .available || FreeFormMapping.has(item, attributes) else { return }
                paths.append(ObjectPath.item(collection.path, ref: item.persistentRef))
            }
            out.objectPaths(paths)
        case "CreateItem":
            let properties = try args.variantDictionary()
            let secret = try readSecret(&args, call)
            let replace = try args.boolean()
            let path = try createItem(collection, properties: properties, secret: secret, replace: replace, call)
            out.objectPath(path)
            out.objectPath(ObjectPath.none)
        case "Delete":
            out.objectPath(try deleteCollectionPrompt(collection, call))
        default:
            throw BusError.unknownMethod("no method \(call.member) on a collection")
        }
    }

    private func collectionProperty(_ name: String, _ collection: Collection, _ call: Call) throws -> ((inout MessageWriter) -> Void)? {
        switch name {
        case "Items":
            let paths = try itemPaths(collection, call.client) { ObjectPath.item(collection.path, ref: $0) }
            return { $0.variant("ao") { $0.objectPaths(paths) } }
        case "Label":
            let label = collection.label
            return { $0.variant("s") { $0.string(label) } }
        case "Locked":
            let locked = isLocked(collection, call.client)
            return { $0.variant("b") { $0.boolean(locked) } }
        case "Created":
            let seconds = collection.createdSeconds
            return { $0.variant("t") { $0.uint64(seconds) } }
        case "Modified":
            var info = stat()
            let seconds = stat(collection.keychainPath, &info) == 0 ? UInt64(max(0, info.st_mtim.tv_sec)) : 0
            return { $0.variant("t") { $0.uint64(seconds) } }
        default:
            return nil
        }
    }

    /// CreateItem: a generic password with the mapped attributes, its
    /// free-form ones and its content type, unique by reference (two items
    /// with the same attributes are two items, as clients expect). With
    /// `replace`, an item with exactly these attributes is updated instead
    /// (an empty one among them included: FreeFormMapping.hasExactly).
    /// Sizes are the engine's to refuse, as for every caller.
    private func createItem(_ collection: Collection, properties: [String: MessageReader], secret: Secret, replace: Bool,
                            _ call: Call) throws -> String {
        var attributes: [String: String] = [:]
        var label: String?
        // Attributes first: a Type names the schema only where they do not.
        for (name, var value) in properties.sorted(by: { $0.key < $1.key }) {
            switch name {
            case Provider.itemInterface + ".Attributes": attributes = try value.stringDictionary(limit: FreeForm.maximumCount)
            case Provider.itemInterface + ".Label": label = try value.string()
            case Provider.itemInterface + ".Type":
                // The item's schema, kept as libsecret keeps it: the xdg:schema attribute.
                let type = try value.string()
                if !type.isEmpty && attributes["xdg:schema"] == nil { attributes["xdg:schema"] = type }
            default: break
            }
        }
        let mapped = FreeFormMapping.split(attributes).mapped
        let freeForm = FreeFormMapping.freeForm(attributes, contentType: secret.contentType, uniqueByReference: true)
        try freeForm.validate()
        let keychain = try open(collection, call.client)
        defer { keychain.releaseFile() }
        if replace, let existing = try keychain.matching(try FreeFormMapping.query(attributes)).first(where: {
            $0.availability == .available && FreeFormMapping.hasExactly($0, attributes)
        }) {
            var query = Query(itemClass: .genericPassword)
            query.persistentRef = existing.persistentRef
            var changes: [Attribute: [UInt8]] = [:]
            if let label { changes[.label] = Array(label.utf8) }
            var kept = freeForm
            kept.uniqueByReference = existing.freeForm.uniqueByReference
            try keychain.update(query, changes: changes, data: secret.value, freeForm: kept)
            let path = ObjectPath.item(collection.path, ref: existing.persistentRef)
            emit(collection.path, Provider.collectionInterface, "ItemChanged") { $0.objectPath(path) }
            return path
        }
        var new = NewItem(itemClass: .genericPassword)
        for (attribute, value) in mapped { try new.set(attribute, value) }
        new.set(label: label ?? "")
        new.freeForm = freeForm
        let item = try keychain.add(new, data: secret.value)
        let path = ObjectPath.item(collection.path, ref: item.persistentRef)
        emit(collection.path, Provider.collectionInterface, "ItemCreated") { $0.objectPath(path) }
        return path
    }
}

extension NewItem {
    /// The Secret Service's label, given or empty: an item made over the bus
    /// has the label its client gave (not locket's default, the service).
    mutating func set(label: String) { attributes[.label] = Array(label.utf8) }
}
