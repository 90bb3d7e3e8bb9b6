// The SSH agent protocol (RFC 9987, which draft-miller-ssh-agent became;
// OpenSSH's PROTOCOL.agent for its extensions). Every message is a uint32
// length, then a message number and its contents, in the SSH wire encoding of
// RFC 4251. locket's agent answers two requests (list the identities, sign
// with one) and refuses every other one with SSH_AGENT_FAILURE: its keys live
// in the keychain, so `ssh-add KEY`, `ssh-add -d`, `ssh-add -x` and the like
// have nothing to act on.

/// Message numbers of the SSH agent protocol.
public enum AgentMessage {
    /// SSH_AGENT_FAILURE: the request was refused or not understood.
    public static let failure: UInt8 = 5
    /// SSH_AGENT_SUCCESS.
    public static let success: UInt8 = 6
    /// SSH_AGENTC_REQUEST_IDENTITIES.
    public static let requestIdentities: UInt8 = 11
    /// SSH_AGENT_IDENTITIES_ANSWER: uint32 count, then (string key blob, string comment) each.
    public static let identitiesAnswer: UInt8 = 12
    /// SSH_AGENTC_SIGN_REQUEST: string key blob, string data, uint32 flags.
    public static let signRequest: UInt8 = 13
    /// SSH_AGENT_SIGN_RESPONSE: string signature.
    public static let signResponse: UInt8 = 14
    /// SSH_AGENTC_ADD_IDENTITY, ADD_ID_CONSTRAINED, ADD_SMARTCARD_KEY and its constrained form.
    public static let addIdentity: [UInt8] = [17, 25, 20, 26]
    /// SSH_AGENTC_REMOVE_IDENTITY, REMOVE_ALL_IDENTITIES, REMOVE_SMARTCARD_KEY.
    public static let removeIdentity: [UInt8] = [18, 19, 21]
    /// SSH_AGENTC_LOCK and SSH_AGENTC_UNLOCK (`ssh-add -x`, `-X`).
    public static let lockAgent: [UInt8] = [22, 23]
    /// The requests of SSH protocol 1's agent, which OpenSSH's clients still
    /// send beside their protocol 2 forms (`ssh-add -D` sends both removals).
    public static let protocol1: [UInt8] = [1, 3, 7, 8, 9, 24]
    /// SSH_AGENTC_EXTENSION: string name, then the extension's contents.
    public static let `extension`: UInt8 = 27

    /// The longest message either side accepts, as OpenSSH's agent and
    /// clients do (AGENT_MAX_LEN): a sign request carries a session hash or a
    /// digest, never a file, so this is generous and bounds each connection.
    public static let maximumLength = 256 * 1024
}

/// One request from a client, read from a message's contents.
public enum AgentRequest: Equatable, Sendable {
    /// List the identities (ssh-add -L, every ssh login).
    case requestIdentities
    /// Sign `data` with the key whose public key blob is `keyBlob`.
    case sign(keyBlob: [UInt8], data: [UInt8], flags: UInt32)
    /// ssh-add of a key or a smartcard: refused, the keychain is where keys go in.
    case addIdentity
    /// ssh-add -d / -D / -e: refused, the keychain is where keys are deleted.
    case removeIdentity
    /// ssh-add -x / -X: refused, `locket lock` locks the keys.
    case lockAgent
    /// An extension; none is supported (session-bind@openssh.com among them).
    case `extension`(name: String)
    /// A request of SSH protocol 1, which no key of SSH 2 answers.
    case protocol1(UInt8)
    /// Any other message number.
    case unknown(UInt8)

    /// Reads a message (its number and contents, without the length).
    /// Requests that locket refuses are recognised by their number alone:
    /// their contents (a private key to add, an agent passphrase) are never
    /// parsed. A malformed sign request or extension is errSecDecode.
    public static func parse(_ message: UnsafeRawBufferPointer) throws -> AgentRequest {
        var r = SSHReader(message)
        guard !r.isAtEnd else { throw KeychainError(.decode, "an empty agent message") }
        let type = try r.byte()
        switch type {
        case AgentMessage.requestIdentities:
            guard r.isAtEnd else { throw KeychainError(.decode, "trailing bytes after an identities request") }
            return .requestIdentities
        case AgentMessage.signRequest:
            let blob = Array(try r.string())
            let data = Array(try r.string())
            let flags = try r.uint32()
            guard r.isAtEnd else { throw KeychainError(.decode, "trailing bytes after a sign request") }
            return .sign(keyBlob: blob, data: data, flags: flags)
        case AgentMessage.extension:
            let name = try r.string()
            guard let text = String(validating: name, as: UTF8.self) else { throw KeychainError(.decode, "an extension name that is not text") }
            return .extension(name: text)
        case let t where AgentMessage.addIdentity.contains(t): return .addIdentity
        case let t where AgentMessage.removeIdentity.contains(t): return .removeIdentity
        case let t where AgentMessage.lockAgent.contains(t): return .lockAgent
        case let t where AgentMessage.protocol1.contains(t): return .protocol1(t)
        default: return .unknown(type)
        }
    }
}
