import LocketWire

// The helper's error frames as KeychainErrors: the OSStatus Apple uses for
// each case, and words that say what happened at the TPM.

extension TPMClient {
    /// The KeychainError for an error frame (u8 failure, u8 stage, u32 code, string message).
    func failure(_ reader: inout FrameReader, _ operation: String) throws -> KeychainError {
        let kind = TPMWire.Failure(rawValue: try reader.u8())
        _ = try reader.u8()
        _ = try reader.u32()
        let message = try reader.string(limit: 1024)
        switch kind {
        case .unavailable?:
            return KeychainError(.notAvailable, "no TPM could be used: \(message)", reason: .noTPM)
        case .otherTPM?:
            return KeychainError(.decode, "the TPM object was made by another TPM (or by this one before it was cleared): it can't be used here (\(message))",
                                 reason: .boundToOtherDevice)
        case .authorization?:
            // The TPM counted it (DA-protected objects): say how close the lockout is.
            let status = try? lockoutStatus()
            let counted = status.map { ", \($0.counter) of \($0.maxTries) failures before the TPM locks out" } ?? ""
            return KeychainError(.authFailed, "the TPM refused the application password while \(operation)\(counted)")
        case .lockout?:
            let status = try? lockoutStatus()
            let interval = Int(status?.interval ?? 0)
            let forgetting = interval > 0 ? "; it forgets one failure every \(interval) s" : ""
            return KeychainError(.authFailed, "the TPM is in dictionary-attack lockout after too many wrong application passwords and refuses the key\(forgetting)",
                                 reason: .tpmLockout(seconds: interval))
        case .policy?:
            return KeychainError(.authFailed, "the TPM refused to unseal: the PCR values differ from those it was sealed to (\(message))")
        case .lost?:
            close()
            return KeychainError(.io, "the TPM stopped answering while \(operation): \(message)")
        case .badRequest?:
            return KeychainError(.decode, "the TPM object was refused while \(operation): \(message)")
        case .resources?:
            return KeychainError(.notAvailable, "the TPM can't do this: \(message)")
        case .protocolError?:
            helperStopped()
            return KeychainError(.io, "locket-tpm refused the request while \(operation): \(message)")
        case .tpm?, nil:
            return KeychainError(.io, "the TPM refused while \(operation): \(message)")
        }
    }
}
