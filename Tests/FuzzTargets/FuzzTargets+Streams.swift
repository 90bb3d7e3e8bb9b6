import LocketCLI
import LocketCore

/// The targets whose input is a stream cut into writes or chunks.
extension FuzzTargets {
    /// Input: a client's byte stream, cut into writes at every 0xfe byte. Keys:
    /// a fixed Ed25519 key (so that seeds can hold sign requests it answers)
    /// and a P-256 key. Properties: no crash; what comes back is a sequence of
    /// whole frames, each SSH_AGENT_FAILURE, an identities answer or a signature.
    public static func agent(_ bytes: [UInt8]) {
        let chunks = bytes.prefix(1 << 16).split(separator: 0xfe, omittingEmptySubsequences: false).map(Array.init)
        let (replies, _) = FuzzEntryPoints.agentConnection(chunks, source: FixedSource())
        var offset = 0
        while offset < replies.count {
            precondition(replies.count - offset >= 5, "a partial reply header")
            let length = Int(replies[offset]) << 24 | Int(replies[offset + 1]) << 16 | Int(replies[offset + 2]) << 8 | Int(replies[offset + 3])
            precondition(length >= 1 && offset + 4 + length <= replies.count, "a reply frame longer than what was sent")
            precondition([5, 12, 14].contains(replies[offset + 4]), "a reply of type \(replies[offset + 4])")
            offset += 4 + length
        }
    }

    struct FixedSource: AgentKeySource {
        static let ed25519 = try! AsymmetricKey(pkcs8: SecureBytes(copying: [
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
        ] + (0..<32).map { UInt8($0) }))
        static let p256 = try! AsymmetricKey.generate(.p256)

        func identities() throws -> [AgentIdentity] {
            [AgentIdentity(publicKeyBlob: try Self.ed25519.sshPublicKeyBlob(), comment: "fixed"),
             AgentIdentity(publicKeyBlob: try Self.p256.sshPublicKeyBlob(), comment: "p256")]
        }

        func withPrivateKey<R>(publicKeyBlob: [UInt8], _ body: (any PrivateKeyOperations) throws -> R) throws -> R {
            for key in [Self.ed25519, Self.p256] where try key.sshPublicKeyBlob() == publicKeyBlob { return try body(key) }
            throw KeychainError(.itemNotFound)
        }
    }

    /// Input: one secret (first byte = its length, 1-16), then the stream, cut
    /// into chunks at every 0xff byte. A second secret, the secret's second half,
    /// exercises nested and overlapping secrets. Properties: however the stream
    /// is chunked, the output equals masking the whole stream at once (every
    /// byte of every occurrence hidden, each run of hidden bytes one
    /// `<redacted>`); and ending the stream after a chunk gives the masking of
    /// what came so far: nothing a later chunk could still turn into a secret
    /// was let out earlier, and nothing is lost when the stream ends.
    public static func mask(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let length = Int(first % 16) + 1
        guard bytes.count > length else { return }
        let secret = Array(bytes[1...length])
        guard !secret.contains(0xff) else { return }
        let secrets = secret.count >= 2 ? [secret, Array(secret[(secret.count / 2)...])] : [secret]
        let chunks = bytes[(length + 1)...].split(separator: 0xff, omittingEmptySubsequences: false).map(Array.init)
        let stream = chunks.flatMap { $0 }
        // Endings after the first 4 chunks only: checking every one costs the
        // square of the input's length, and the fuzzer's speed with it.
        guard let out = try? CLIFuzzEntryPoints.mask(secrets: secrets, chunks: chunks, endings: 4) else { return }
        precondition(out.whole == masked(stream, secrets), "chunked masking differs from masking the whole stream")
        var sofar: [UInt8] = []
        for (chunk, ending) in zip(chunks, out.endingAfterChunk) {
            sofar += chunk
            precondition(ending == masked(sofar, secrets), "ending the stream after a chunk masks it differently")
        }
    }

    /// The masking of a whole stream, the slow obvious way.
    static func masked(_ stream: [UInt8], _ secrets: [[UInt8]]) -> [UInt8] {
        var covered = [Bool](repeating: false, count: stream.count)
        for secret in secrets where secret.count <= stream.count {
            for i in 0...(stream.count - secret.count) where stream[i..<(i + secret.count)].elementsEqual(secret) {
                for k in i..<(i + secret.count) { covered[k] = true }
            }
        }
        var out: [UInt8] = []
        var i = 0
        while i < stream.count {
            if covered[i] {
                out += Array("<redacted>".utf8)
                while i < stream.count && covered[i] { i += 1 }
            } else {
                out.append(stream[i])
                i += 1
            }
        }
        return out
    }
}
