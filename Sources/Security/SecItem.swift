import LocketCore

/// Adds an item to the default keychain (SPEC §3, §12): a password from its
/// attributes and kSecValueData, a key or certificate from kSecValueRef or
/// kSecValueData, an identity from kSecValueRef. An item with the same
/// primary key: errSecDuplicateItem. Locked: errSecInteractionNotAllowed.
/// `result`, when given, receives what the kSecReturn... keys ask for.
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    withStatus {
        let value = try ItemCalls.add(try ItemRequest(attributes, .add))
        result?.pointee = value
    }
}

/// Finds items (SPEC §4): every attribute given must match byte for byte;
/// at most one unless kSecMatchLimit says more; oldest first. `result`
/// receives what the kSecReturn... keys ask for (an array unless the limit
/// is one). Nothing matches: errSecItemNotFound. A match locked:
/// errSecInteractionNotAllowed, never errSecItemNotFound.
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    result?.pointee = nil
    return withStatus {
        let value = try ItemCalls.copyMatching(try ItemRequest(query, .search))
        result?.pointee = value
    }
}

/// Changes every item `query` matches, all or nothing: attributes, the
/// secret (kSecValueData), the access group. A change that would make two
/// items share a primary key: errSecDuplicateItem, and nothing changes.
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    withStatus { try ItemCalls.update(try ItemRequest(query, .update), try ItemRequest(attributesToUpdate, .changes)) }
}

/// Deletes every item `query` matches. Works while locked.
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    withStatus { try ItemCalls.delete(try ItemRequest(query, .delete)) }
}

/// The work of the four functions, on the engine's operations.
enum ItemCalls {
    /// The classes a persistent reference alone may name.
    private static let referenceClasses: [ItemClass] = [.genericPassword, .internetPassword, .key, .certificate]

    static func copyMatching(_ request: ItemRequest) throws -> AnyObject? {
        let limit = request.limit ?? .one
        let target = try KeychainTarget.current()
        let found: [ItemValues.Found]
        switch request.kind {
        case .identity?: found = try identities(request, limit)
        case .item(let itemClass)?: found = try items(request, itemClass, limit).map { .item($0) }
        case nil:
            guard request.persistentRef != nil else { throw KeychainError(.param, "SecItemCopyMatching needs kSecClass") }
            found = try firstClass { try items(request, $0, limit).map { .item($0) } }
        }
        let values = try found.map { try ItemValues.value($0, request.returns, target, request.authentication) }
        if request.returns.isEmpty { return nil }
        if limit == .one { return values.first ?? nil }
        return values.compactMap { $0 } as NSArray
    }

    /// The items of `itemClass` a search request finds.
    private static func items(_ request: ItemRequest, _ itemClass: ItemClass, _ limit: MatchLimit) throws -> [Item] {
        var query = try request.query(itemClass)
        try ItemCalls.match(request.ref, in: &query)
        // A certificate's object is made from its value; a public key's object keeps it too. A
        // password has none: with other return types, Apple answers with the secret it read for it.
        let data = request.returns.contains(.data) || (request.returns.contains(.ref) && itemClass == .certificate)
            || (request.returns.contains(.ref) && !itemClass.holdsKeyMaterial && request.returns != .ref)
        let searched = limit
        var found: [Item]
        do {
            found = try Operation.run(request.authentication) { keychain, entry in
                try entry?.search(query, limit: searched, returnData: data) ?? keychain.search(query, limit: searched, returnData: data)
            }
        } catch let error as KeychainError where request.interaction == .skip && data && isProofNeeded(error) {
            found = try skippingProofs(query, request.authentication)
        }
        if case .count(let n) = limit { found = Array(found.prefix(n)) } else if limit == .one { found = Array(found.prefix(1)) }
        if found.isEmpty { throw KeychainError(.itemNotFound) }
        return found
    }

    /// kSecUseAuthenticationUISkip: the matches whose access control needs
    /// no proof, with their secrets; the others left out.
    private static func skippingProofs(_ query: Query, _ authentication: Authentication) throws -> [Item] {
        try Operation.run(authentication) { keychain, _ in
            let plain = try keychain.search(query, limit: .all).filter { $0.accessControl == nil }
            return try plain.map { item in
                var one = Query(itemClass: query.itemClass)
                one.persistentRef = item.persistentRef
                return try keychain.search(one, returnData: true)[0]
            }
        }
    }

    private static func isProofNeeded(_ error: KeychainError) -> Bool {
        if case .proofNeeded? = error.reason { return true }
        return false
    }

    /// The identities a search request finds, each with its certificate's value.
    private static func identities(_ request: ItemRequest, _ limit: MatchLimit) throws -> [ItemValues.Found] {
        let query = try identityQuery(request)
        let valued = request.returns.contains(.data) || request.returns.contains(.ref)
        return try Operation.run(request.authentication) { keychain, _ in
            try keychain.keys.identities(query, limit: limit).map { pair in
                var certificate = pair.certificate
                if valued {
                    var byRef = Query(itemClass: .certificate)
                    byRef.persistentRef = pair.certificate.persistentRef
                    certificate = try keychain.search(byRef, returnData: true)[0]
                }
                return .identity(key: pair.key, certificate: certificate)
            }
        }
    }

    static func identityQuery(_ request: ItemRequest) throws -> IdentityQuery {
        var query = IdentityQuery()
        for (attribute, value) in request.terms { try query.match(attribute, value) }
        if let group = request.accessGroup { try query.match(.accessGroup, Array(group.utf8)) }
        if let identity = request.ref as? SecIdentity {
            for (attribute, value) in identity.certificate.terms() { try query.certificate.match(attribute, value) }
        } else if request.ref != nil {
            throw KeychainError(.param, "kSecValueRef of an identity query must be a SecIdentity")
        }
        if request.persistentRef != nil { throw KeychainError(.param, "an identity has no persistent reference of its own") }
        return query
    }

    /// kSecValueRef in a query: the item it is.
    static func match(_ ref: AnyObject?, in query: inout Query) throws {
        guard let ref else { return }
        switch (query.itemClass, ref) {
        case (.key, let key as SecKey):
            switch key.backing {
            case .stored(let stored): query.persistentRef = stored.ref
            case .memory(let held, _):
                try query.match(.applicationLabel, held.applicationLabel)
                try query.match(.keyClass, Array(held.keyClass.rawValue.utf8))
            case .tpm(let use):
                try query.match(.applicationLabel, use.publicKey.applicationLabel)
                try query.match(.keyClass, Array(KeyClass.private.rawValue.utf8))
            }
        case (.certificate, let certificate as SecCertificate):
            for (attribute, value) in certificate.terms() { try query.match(attribute, value) }
        default:
            throw KeychainError(.param, "kSecValueRef is not an object of the query's class")
        }
    }

    /// The result of `body` for the first class that has the item (a
    /// persistent reference given without a class).
    static func firstClass<T>(_ body: (ItemClass) throws -> T) throws -> T {
        for itemClass in referenceClasses {
            do { return try body(itemClass) } catch let error as KeychainError where error.code == .itemNotFound { continue }
        }
        throw KeychainError(.itemNotFound)
    }

    static func delete(_ request: ItemRequest) throws {
        if let limit = request.limit, limit != .all { throw KeychainError(.param, "SecItemDelete deletes every match: kSecMatchLimit can only be kSecMatchLimitAll") }
        if request.kind == .identity {
            let query = try identityQuery(request)
            _ = try Operation.run(request.authentication) { keychain, entry in
                defer { entry?.didWrite() }
                return try keychain.keys.deleteIdentities(query)
            }
            return
        }
        func deleteAll(_ itemClass: ItemClass) throws {
            var query = try request.query(itemClass)
            try match(request.ref, in: &query)
            try Operation.run(request.authentication) { keychain, entry in
                defer { entry?.didWrite() }
                _ = try keychain.delete(query)
            }
        }
        switch request.kind {
        case .item(let itemClass)?: try deleteAll(itemClass)
        case .identity?: break
        case nil:
            guard request.persistentRef != nil else { throw KeychainError(.param, "SecItemDelete needs kSecClass") }
            try firstClass(deleteAll)
        }
    }
}
