import LocketCore

/// Resolves secret references (SPEC §9: `SERVICE/ACCOUNT` or
/// `SCHEME://[USER@]HOST[:PORT][/PATH]`) for exec and inject: the keychain
/// is opened once, on the first reference, and each distinct reference is
/// looked up once.
final class SecretResolver {
    private let context: Context
    private var keychain: Keychain?
    private var resolved: [String: SecureBytes] = [:]

    init(_ context: Context) { self.context = context }

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
