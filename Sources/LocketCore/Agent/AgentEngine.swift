/// Answers agent requests one message at a time from an `AgentKeySource`,
/// asked afresh for each request; the engine itself keeps no key and no state.
public struct AgentEngine {
    /// Where the identities and private keys come from.
    public let source: any AgentKeySource

    public init(source: any AgentKeySource) { self.source = source }

    /// SSH_AGENT_FAILURE, framed.
    public static let failure: [UInt8] = frame(AgentMessage.failure, [])

    /// The framed reply (length included) to one message (its number and
    /// contents, without the length), and what to report when the request
    /// was refused. Every request gets a reply, never a crash: whatever goes
    /// wrong is SSH_AGENT_FAILURE and an event.
    public func respond(to message: UnsafeRawBufferPointer) -> (reply: [UInt8], event: AgentEvent?) {
        let request: AgentRequest
        do {
            request = try AgentRequest.parse(message)
        } catch {
            return (Self.failure, .malformed(Self.keychainError(error)))
        }
        switch request {
        case .requestIdentities:
            return identities()
        case .sign(let blob, let data, let flags):
            return sign(blob, data, flags)
        case .addIdentity:
            return (Self.failure, .addRefused)
        case .removeIdentity:
            return (Self.failure, .removeRefused)
        case .lockAgent:
            return (Self.failure, .lockRefused)
        case .extension:
            // RFC 9987: an unsupported extension gets an empty failure. Every
            // ssh sends session-bind@openssh.com, so this is no event.
            return (Self.failure, nil)
        case .protocol1:
            // Sent beside the protocol 2 request it shadows, which has its own event.
            return (Self.failure, nil)
        case .unknown(let type):
            return (Self.failure, .unsupported(type))
        }
    }

    private func identities() -> (reply: [UInt8], event: AgentEvent?) {
        do {
            let list = try source.identities()
            let contents = SSHWriter.encode { w in
                w.uint32(UInt32(list.count))
                for identity in list {
                    w.string(identity.publicKeyBlob)
                    w.string(identity.comment)
                }
            }
            // A client refuses a longer answer as a protocol error; a clear failure is better.
            guard contents.count < AgentMessage.maximumLength else {
                throw KeychainError(.dataTooLarge, "\(list.count) identities are more than one agent message can hold")
            }
            return (Self.frame(AgentMessage.identitiesAnswer, contents), nil)
        } catch {
            return (Self.failure, .identitiesRefused(Self.keychainError(error)))
        }
    }

    private func sign(_ blob: [UInt8], _ data: [UInt8], _ flags: UInt32) -> (reply: [UInt8], event: AgentEvent?) {
        do {
            let signature = try source.withPrivateKey(publicKeyBlob: blob) { key in
                // Whatever the source found, only the key the client named signs.
                guard (key as? AsymmetricKey)?.keyClass != .public, try key.publicKey.sshPublicKeyBlob() == blob else {
                    throw KeychainError(.itemNotFound, "the key source gave a different key than the one asked for")
                }
                return try key.sshSignature(for: data, flags: flags)
            }
            return (Self.frame(AgentMessage.signResponse, SSHWriter.encode { $0.string(signature) }), nil)
        } catch {
            return (Self.failure, .signRefused(Self.keychainError(error)))
        }
    }

    private static func keychainError(_ error: Error) -> KeychainError {
        error as? KeychainError ?? KeychainError(.io, "the key source failed: \(error)")
    }

    /// uint32 length, message number, contents.
    static func frame(_ type: UInt8, _ contents: [UInt8]) -> [UInt8] {
        SSHWriter.encode { w in
            w.uint32(UInt32(contents.count + 1))
            w.byte(type)
            w.raw(contents)
        }
    }
}
