import LocketCore

/// Resolves secret references (SPEC §9: `SERVICE/ACCOUNT` or
/// `SCHEME://[USER@]HOST[:PORT][/PATH]`) for exec and inject: the keychain
/// is opened once, on the first reference, and each distinct reference is
/// looked up once; `prefetch` looks them all up in one transaction.
final class SecretResolver {
    private let context: Context
    private var keychain: Keychain?
    private var resolved: [String: SecureBytes] = [:]

    init(_ context: Context) { self.context = context }

    /// Looks up every well-formed reference in `references` at once (one
    /// transaction: `Keychain.search(_:)` with an array), before `secret`
    /// asks for them one by one. What fails here (a malformed or missing
    /// reference, a locked class, an item that wants a prompt) is left for
    /// `secret`, which reports or prompts for it in the caller's order
    /// exactly as without this; so nothing here prompts or throws.
    func prefetch(_ references: [String]) {
        let wanted = Array(Set(references.filter { resolved[$0] == nil }))
        let queries = wanted.compactMap { reference in (try? Reference.query(reference)).map { (reference, $0) } }
        guard queries.count > 1 else { return }
        if keychain == nil { keychain = try? context.openKeychain() }
        guard let keychain, let results = try? keychain.search(queries.map(\.1), limit: .one, returnData: true) else { return }
        for ((reference, _), result) in zip(queries, results) {
            if case .success(let items) = result, let data = items.first?.data { resolved[reference] = data }
        }
    }

    /// The secret `reference` names; errSecParam when it is malformed,
    /// errSecItemNotFound when nothing matches.
    func secret(_ reference: String) throws -> SecureBytes {
        if let known = resolved[reference] { return known }
        let query = try Reference.query(reference)
        if keychain == nil { keychain = try context.openKeychain() }
        let keychain = keychain!
        guard let data = try AccessPrompt.run(keychain, nil, context, { try keychain.search(query, limit: .one, returnData: true) }).first?.data else {
            throw KeychainError(.itemNotFound)
        }
        resolved[reference] = data
        return data
    }
}
