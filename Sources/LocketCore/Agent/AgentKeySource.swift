/// An identity an agent offers: a public key and the comment `ssh-add -L` shows.
public struct AgentIdentity: Equatable, Sendable {
    /// The public key in SSH wire encoding (`AsymmetricKey.sshPublicKeyBlob()`).
    public let publicKeyBlob: [UInt8]
    /// The key's label, or whatever names it for the user; may be empty.
    public let comment: String

    public init(publicKeyBlob: [UInt8], comment: String) {
        self.publicKeyBlob = publicKeyBlob
        self.comment = comment
    }
}

/// Where the agent's keys come from. The agent asks afresh for every
/// request and keeps nothing between them, so an implementation that opens
/// the keychain in each call makes `lock`, auto-lock, protection classes,
/// access groups and access control hold for every signature.
public protocol AgentKeySource {
    /// The identities the caller may see now, in a stable order. A failure
    /// (a locked keychain) is a KeychainError; the client is refused.
    func identities() throws -> [AgentIdentity]

    /// Runs `body` with the private key whose SSH public key blob is
    /// `publicKeyBlob`, and wipes it afterwards. errSecItemNotFound when the
    /// caller may see no such key; errSecInteractionNotAllowed when its
    /// protection class is locked; any other KeychainError as it comes.
    /// The key is in memory, or in a TPM (a Secure Enclave key).
    func withPrivateKey<R>(publicKeyBlob: [UInt8], _ body: (any PrivateKeyOperations) throws -> R) throws -> R
}
