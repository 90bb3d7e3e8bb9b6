/// The one mapping between the Secret Service's attributes and a generic
/// password's (SPEC §18), used by the provider and by the command line's
/// `--attr NAME=VALUE`, so that `secret-tool store service S username A` and
/// `locket add -s S -a A` name the same attributes.
///
/// - `service` is the service (svce) and `username` the account (acct): the
///   names python keyring, go-keyring, keyring-rs and secret-tool's users
///   give them; an empty value is the same as none (as for every Apple
///   attribute, SPEC §3).
/// - The Secret Service item's Label is the label (labl).
/// - Every other attribute (`xdg:schema`, `application`, git's `server`,
///   anything) is free-form: kept whole, sealed, found by exact match.
public enum FreeFormMapping {
    /// The Secret Service attribute names that are generic-password attributes.
    public static let mapped: [(name: String, attribute: Attribute)] = [("service", .service), ("username", .account)]

    /// The generic-password attribute a Secret Service attribute name is, if any.
    public static func attribute(named name: String) -> Attribute? { mapped.first { $0.name == name }?.attribute }

    /// Splits Secret Service attributes into generic-password attributes and free-form ones.
    public static func split(_ attributes: [String: String]) -> (mapped: [(Attribute, [UInt8])], free: [String: String]) {
        var mapped: [(Attribute, [UInt8])] = []
        var free: [String: String] = [:]
        for (name, value) in attributes {
            if let attribute = attribute(named: name) { mapped.append((attribute, Array(value.utf8))) } else { free[name] = value }
        }
        return (mapped, free)
    }

    /// The Secret Service attributes of `item`: its free-form attributes, and
    /// `service` and `username` when its service and account are not empty.
    public static func attributes(of item: Item) -> [String: String] {
        var out = item.freeForm.attributes
        for (name, attribute) in mapped where !item[attribute].isEmpty {
            out[name] = String(decoding: item[attribute], as: UTF8.self)
        }
        return out
    }

    /// A query of generic passwords with exactly `attributes` (each an equality).
    public static func query(_ attributes: [String: String]) throws -> Query {
        var query = Query(itemClass: .genericPassword)
        let (mapped, free) = split(attributes)
        for (attribute, value) in mapped { try query.match(attribute, value) }
        for (name, value) in free { query.match(freeForm: name, value) }
        return query
    }
}
