/// The one mapping between the Secret Service's attributes and a generic
/// password's (SPEC §18), used by the provider and by the command line's
/// `--attr NAME=VALUE`, so that `secret-tool store service S username A` and
/// `locket add -s S -a A` name the same attributes.
///
/// - `service` is the service (svce) and `username` the account (acct): the
///   names python keyring, go-keyring, keyring-rs and secret-tool's users
///   give them. An empty value is a value (issue 44: python keyring's
///   `username ''`): the service or account is empty, as for every Apple
///   attribute (SPEC §3), and the attribute is kept as a free-form one of
///   its name with the empty value, so it is matched and given back as it
///   was given. An item without that record (`FreeForm.keepsEmptyMapped`
///   false: made before, or by `add`) matches either way.
/// - The Secret Service item's Label is the label (labl).
/// - Every other attribute (`xdg:schema`, `application`, git's `server`,
///   anything) is free-form: kept whole, sealed, found by exact match.
public enum FreeFormMapping {
    /// The Secret Service attribute names that are generic-password attributes.
    public static let mapped: [(name: String, attribute: Attribute)] = [("service", .service), ("username", .account)]

    /// The generic-password attribute a Secret Service attribute name is, if any.
    public static func attribute(named name: String) -> Attribute? { mapped.first { $0.name == name }?.attribute }

    /// Splits Secret Service attributes into generic-password attributes and
    /// free-form ones; a mapped name with the empty value is free-form (its
    /// attribute stays empty).
    public static func split(_ attributes: [String: String]) -> (mapped: [(Attribute, [UInt8])], free: [String: String]) {
        var mapped: [(Attribute, [UInt8])] = []
        var free: [String: String] = [:]
        for (name, value) in attributes {
            if let attribute = attribute(named: name), !value.isEmpty { mapped.append((attribute, Array(value.utf8))) } else { free[name] = value }
        }
        return (mapped, free)
    }

    /// The free-form record of an item with exactly `attributes`, as the
    /// Secret Service writes it.
    public static func freeForm(_ attributes: [String: String], contentType: String?, uniqueByReference: Bool) -> FreeForm {
        FreeForm(attributes: split(attributes).free, contentType: contentType, uniqueByReference: uniqueByReference, keepsEmptyMapped: true)
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

    /// A query of generic passwords with `attributes` (each an equality; a
    /// mapped name with the empty value matches the empty service or
    /// account). What it matches may still lack an empty one: `has` decides
    /// for an item that could be opened.
    public static func query(_ attributes: [String: String]) throws -> Query {
        var query = Query(itemClass: .genericPassword)
        for (name, value) in attributes {
            if let attribute = attribute(named: name) { try query.match(attribute, Array(value.utf8)) } else { query.match(freeForm: name, value) }
        }
        return query
    }

    /// Whether `item`, matched by `query(attributes)`, has each of
    /// `attributes`: a mapped name given empty must be there empty, or may
    /// have been (an item from before `keepsEmptyMapped`).
    public static func has(_ item: Item, _ attributes: [String: String]) -> Bool {
        for (name, attribute) in mapped where attributes[name]?.isEmpty == true {
            guard item[attribute].isEmpty, item.freeForm.attributes[name] != nil || !item.freeForm.keepsEmptyMapped else { return false }
        }
        return true
    }

    /// Whether `item` has exactly `attributes` (CreateItem's `replace`):
    /// `has`, and no attribute more; an empty service or username of an
    /// item from before `keepsEmptyMapped` counts as given or not alike.
    public static func hasExactly(_ item: Item, _ attributes: [String: String]) -> Bool {
        guard has(item, attributes) else { return false }
        let own = self.attributes(of: item)
        var given = attributes
        if !item.freeForm.keepsEmptyMapped {
            for (name, _) in mapped where own[name] == nil && given[name]?.isEmpty == true { given[name] = nil }
        }
        return own == given
    }
}
