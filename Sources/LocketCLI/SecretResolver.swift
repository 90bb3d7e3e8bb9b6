import LocketCore

/// Resolves secret references (SPEC §9: `SERVICE/ACCOUNT` or
/// `SCHEME://[USER@]HOST[:PORT][/PATH]`) for exec and inject: the keychain
/// is opened once, on the first reference, and each distinct reference is
/// looked up once; `prefetch` looks them all up in one transaction.
final class SecretResolver {
    private let context: Context
    private var keychain: Keychain?
    private var resolved: [String: SecureBytes] = [:]
    /// Why `prefetch` could not open the keychain: `secret` reports it where
    /// it would have opened it, instead of opening (and prompting) again.
    private var openFailure: Error?

    init(_ context: Context) { self.context = context }

    /// Looks up every reference in `references` at once (one transaction:
    /// `Keychain.search(_:)` with an array), before `secret` asks for them
    /// one by one. Only when all are well-formed, so that a malformed one is
    /// still reported before the keychain is opened. What fails here (a
    /// missing item, a locked class, an item that wants a prompt) is left
    /// for `secret`, which reports or prompts for it in the caller's order
    /// exactly as without this; nothing here prompts but what opening the
    /// keychain for the first reference would.
    func prefetch(_ references: [String]) {
        let wanted = Array(Set(references.filter { resolved[$0] == nil }))
        var queries: [(reference: String, query: Query)] = []
        for reference in wanted {
            guard let query = try? Reference.query(reference) else { return }
            queries.append((reference, query))
        }
        guard queries.count > 1, keychain == nil, openFailure == nil else { return }
        do { keychain = try context.openKeychain() } catch { openFailure = error; return }
        guard let keychain, let results = try? keychain.search(queries.map(\.query), limit: .one, returnData: true) else { return }
        for ((reference, _), result) in zip(queries, results) {
            if case .success(let items) = result, let data = items.first?.data { resolved[reference] = data }
        }
    }

    /// The secret `reference` names; errSecParam when it is malformed,
    /// errSecItemNotFound when nothing matches.
    func secret(_ reference: String) throws -> SecureBytes {
        if let known = resolved[reference] { return known }
        let query = try Reference.query(reference)
        if let openFailure { throw openFailure }
        if keychain == nil { keychain = try context.openKeychain() }
        let keychain = keychain!
        guard let data = try AccessPrompt.run(keychain, nil, context, { try keychain.search(query, limit: .one, returnData: true) }).first?.data else {
            throw KeychainError(.itemNotFound)
        }
        resolved[reference] = data
        return data
    }
}
