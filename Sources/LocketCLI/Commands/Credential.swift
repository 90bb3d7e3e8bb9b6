import Glibc
import LocketCore
import LocketSupport

extension Commands {
    /// `locket credential get|store|erase`, also run as `git-credential-locket`.
    /// A helper must never break git: problems are a hint on stderr and exit
    /// 0, so that git falls back to its own prompt; success prints nothing on stderr.
    static func credential(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        guard invocation.operands.count == 1, let operation = invocation.operands.first else {
            throw UsageError(message: "name one operation: get, store or erase", command: "credential")
        }
        guard ["get", "store", "erase"].contains(operation) else { return 0 }
        let input = try Prompt.readAll(context.io.stdin, what: "standard input", limit: GitCredential.maximumSize)
        var bytes = input.bytes
        let request = GitCredential(parsing: bytes)
        wipe(&bytes)
        do {
            switch operation {
            case "get": try credentialGet(request, context)
            case "store": try credentialStore(request, context)
            default: try credentialErase(request, context)
            }
        } catch let error as KeychainError {
            switch error.code {
            case .itemNotFound, .duplicateItem:
                break
            case .interactionNotAllowed:
                context.err("locket: the keychain is locked; run 'locket unlock' to let git use it")
            case .noSuchKeychain:
                context.err("locket: no keychain yet; run 'locket init' to let git store credentials")
            default:
                context.err("locket: error: \(error.description)")
            }
        }
        return 0
    }

    /// The query for a request; absent fields are wildcards. nil when a field
    /// has no keychain equivalent, so nothing can match.
    private static func credentialQuery(_ request: GitCredential, exactPort: Bool) throws -> Query? {
        var query = Query(itemClass: .internetPassword)
        if request.fields["protocol"] != nil {
            guard let code = request.protocolCode else { return nil }
            try query.match(.protocol, code)
        }
        if let (server, port) = request.serverAndPort {
            try query.match(.server, Array(server.utf8))
            if let port { try query.match(.port, port) } else if exactPort { try query.match(.port, []) }
        }
        if let path = request.fields["path"] { try query.match(.path, Array(path.utf8)) }
        if let user = request.fields["username"] { try query.match(.account, Array(user.utf8)) }
        return query
    }

    private static func credentialGet(_ request: GitCredential, _ context: Context) throws {
        guard let query = try credentialQuery(request, exactPort: true) else { return }
        let keychain = try context.openKeychain()
        guard let item = try AccessPrompt.run(keychain, nil, context, { try keychain.search(query, limit: .one, returnData: true) }).first,
              let secret = item.data else { return }
        // A newline or NUL in a value would inject lines into git's protocol: such an item can't be given to git.
        let unsafe: (UInt8) -> Bool = { $0 == 0 || $0 == 0x0a || $0 == 0x0d }
        guard !item[.account].contains(where: unsafe), !secret.withUnsafeBytes({ $0.contains(where: unsafe) }) else {
            context.err("locket: the stored credential contains a line break and can't be passed to git")
            return
        }
        var out: [UInt8] = []
        // Sized up front: growing would free a block holding part of the secret unwiped.
        out.reserveCapacity(32 + item[.account].count + secret.count + (item.extra?.count ?? 0))
        out += Array("username=".utf8) + item[.account] + [0x0a] + Array("password=".utf8)
        secret.withUnsafeBytes { out.append(contentsOf: $0) }
        out.append(0x0a)
        if let extra = item.extra { extra.withUnsafeBytes { out.append(contentsOf: $0) } }
        context.out.bytes(out)
        wipe(&out)
    }

    private static func credentialStore(_ request: GitCredential, _ context: Context) throws {
        guard let password = request.fields["password"], let code = request.protocolCode,
              let (server, port) = request.serverAndPort, !server.isEmpty else { return }
        var item = NewItem(itemClass: .internetPassword)
        try item.set(.protocol, code)
        try item.set(.server, Array(server.utf8))
        if let port { try item.set(.port, port) }
        try item.set(.path, Array((request.fields["path"] ?? "").utf8))
        try item.set(.account, Array((request.fields["username"] ?? "").utf8))
        var extra: [UInt8] = []
        for key in GitCredential.keptFields {
            if let value = request.fields[key] { extra += Array("\(key)=\(value)\n".utf8) }
        }
        let keychain = try context.openKeychain()
        try keychain.add(item, data: SecureBytes(copying: Array(password.utf8)),
                         extra: extra.isEmpty ? nil : SecureBytes(copying: extra), updateExisting: true)
        wipe(&extra)
    }

    private static func credentialErase(_ request: GitCredential, _ context: Context) throws {
        // A request that names no host, protocol or path (a blank line, an
        // empty stdin, a username alone) would match every internet password:
        // refuse it, as git's credential-store does and as delete demands --all.
        guard ["host", "protocol", "path"].contains(where: { request.fields[$0]?.isEmpty == false }) else {
            throw KeychainError(.param, "credential erase names no host, protocol or path and would erase every internet password; "
                                + "nothing was erased (use 'locket delete --class inet --all' for that)")
        }
        guard let query = try credentialQuery(request, exactPort: true) else { return }
        let keychain = try context.openKeychain()
        guard let password = request.fields["password"] else {
            try keychain.delete(query)
            return
        }
        // Only the items whose password is the one git rejected.
        let given = try SecureBytes(copying: Array(password.utf8))
        for item in try keychain.search(query, limit: .all, returnData: true) where item.data?.constantTimeEquals(given) == true {
            var exact = Query(itemClass: .internetPassword)
            exact.persistentRef = item.persistentRef
            exact.accessGroup = item.accessGroup
            try keychain.delete(exact)
        }
    }
}
