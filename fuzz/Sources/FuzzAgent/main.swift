import FuzzSupport
import LocketCore

/// Input: a client's byte stream, cut into writes at every 0xfe byte. Keys:
/// a fixed Ed25519 key (so that seeds can hold sign requests it answers)
/// and a P-256 key. Properties: no crash; what comes back is a sequence of
/// whole frames, each SSH_AGENT_FAILURE, an identities answer or a signature.
struct FixedSource: AgentKeySource {
    static let ed25519 = try! AsymmetricKey(pkcs8: SecureBytes(copying: [
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
    ] + (0..<32).map { UInt8($0) }))
    static let p256 = try! AsymmetricKey.generate(.p256)

    func identities() throws -> [AgentIdentity] {
        [AgentIdentity(publicKeyBlob: try Self.ed25519.sshPublicKeyBlob(), comment: "fixed"),
         AgentIdentity(publicKeyBlob: try Self.p256.sshPublicKeyBlob(), comment: "p256")]
    }

    func withPrivateKey<R>(publicKeyBlob: [UInt8], _ body: (AsymmetricKey) throws -> R) throws -> R {
        for key in [Self.ed25519, Self.p256] where try key.sshPublicKeyBlob() == publicKeyBlob { return try body(key) }
        throw KeychainError(.itemNotFound)
    }
}

runFuzzer { data, size in
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: min(size, 1 << 16)))
    let chunks = bytes.split(separator: 0xfe, omittingEmptySubsequences: false).map(Array.init)
    let (replies, _) = FuzzEntryPoints.agentConnection(chunks, source: FixedSource())
    var offset = 0
    while offset < replies.count {
        precondition(replies.count - offset >= 5, "a partial reply header")
        let length = Int(replies[offset]) << 24 | Int(replies[offset + 1]) << 16 | Int(replies[offset + 2]) << 8 | Int(replies[offset + 3])
        precondition(length >= 1 && offset + 4 + length <= replies.count, "a reply frame longer than what was sent")
        precondition([5, 12, 14].contains(replies[offset + 4]), "a reply of type \(replies[offset + 4])")
        offset += 4 + length
    }
    return 0
}
