import LocketSupport
import LocketWire

// A small secret sealed by the TPM (`init --tpm`'s device secret): a
// keyed-hash object under the storage key, so its key file opens only in
// this TPM, and after a TPM clear in none. Optionally bound to PCRs as well.

extension TPMClient {
    /// TPM2_CC_PolicyPCR and TPM2_CC_PolicyAuthValue, as key-file policy steps name them.
    static let policyPCR: UInt32 = 0x17f
    static let policyAuthValue: UInt32 = 0x16b

    /// Seals `secret` (1 to 128 bytes) in the TPM. With `pcrs`, the TPM
    /// unseals it only while those SHA-256 PCRs hold the values they hold
    /// now (and the key file carries the policy that says so); with an
    /// authorization value, only with it (counted toward lockout).
    public func seal(_ secret: SecureBytes, authorization: TPMAuthorization? = nil, pcrs: PCRSelection = .none) throws -> TSS2KeyFile {
        guard (1...TPMWire.maximumSealed).contains(secret.count) else {
            throw KeychainError(.param, "the TPM seals 1 to \(TPMWire.maximumSealed) bytes, not \(secret.count)")
        }
        var writer = FrameWriter(tpm: .seal, capacity: 64 + secret.count + TPMWire.maximumAuthorization)
        secret.withUnsafeBytes { writer.field($0) }
        Self.append(authorization, to: &writer)
        writer.u32(pcrs.mask)
        defer { writer.wipe() }
        let (publicArea, privateArea) = try request(writer, "sealing", authorized: authorization != nil) { reader in try Self.object(&reader, unexpected) }
        var policy: [TSS2KeyFile.PolicyStep] = []
        if pcrs.mask != 0 {
            policy.append(TSS2KeyFile.PolicyStep(commandCode: Self.policyPCR, commandPolicy: Self.pcrPolicy(pcrs)))
            if authorization != nil { policy.append(TSS2KeyFile.PolicyStep(commandCode: Self.policyAuthValue, commandPolicy: [])) }
        }
        return TSS2KeyFile(kind: .sealed, emptyAuth: authorization == nil, policy: policy, publicArea: publicArea, privateArea: privateArea)
    }

    /// The secret `sealed` holds, in guarded memory. errSecDecode for a key
    /// file of another TPM (or of this one before a clear), errSecAuthFailed
    /// for a wrong authorization value or PCRs that changed.
    public func unseal(_ sealed: TSS2KeyFile, authorization: TPMAuthorization? = nil) throws -> SecureBytes {
        guard sealed.kind == .sealed else { throw KeychainError(.decode, "the TSS2 key file holds a key, not a sealed secret") }
        guard sealed.parent == TSS2KeyFile.ownerParent else {
            throw KeychainError(.decode, "the sealed secret's parent is the handle 0x\(String(sealed.parent, radix: 16)); locket unseals under the owner hierarchy's storage key (0x40000001) only")
        }
        let area = try TPMPublicArea(sealed.publicArea)
        guard area.type == .keyedHash else { throw KeychainError(.decode, "the sealed secret's public area is not a keyed-hash object") }
        let pcrs = try Self.pcrs(of: sealed)
        if sealed.emptyAuth != (authorization == nil) {
            throw authorization == nil
                ? KeychainError(.interactionNotAllowed, "the sealed secret has an authorization value: give it")
                : KeychainError(.param, "the sealed secret has no authorization value")
        }
        var writer = FrameWriter(tpm: .unseal, capacity: 64 + sealed.publicArea.count + sealed.privateArea.count + TPMWire.maximumAuthorization)
        Self.append(sealed, to: &writer)
        Self.append(authorization, to: &writer)
        writer.u32(pcrs.mask)
        defer { writer.wipe() }
        return try request(writer, "unsealing", authorized: authorization != nil) { reader in
            guard reader.kind == TPMWire.Kind.secret.rawValue else { throw unexpected(reader) }
            return try reader.withField(limit: TPMWire.maximumSealed) { try SecureBytes(copying: $0) }
        }
    }

    /// PolicyPCR's parameters: an empty pcrDigest (the TPM takes the PCRs'
    /// values when the policy runs) and the one-bank TPML_PCR_SELECTION.
    static func pcrPolicy(_ pcrs: PCRSelection) -> [UInt8] {
        let mask = pcrs.mask
        return [0, 0] + [0, 0, 0, 1] + [0x00, 0x0b, 3] + [UInt8(mask & 0xff), UInt8((mask >> 8) & 0xff), UInt8((mask >> 16) & 0xff)]
    }

    /// The PCRs a sealed key file's policy binds it to: none, or the one
    /// PolicyPCR locket writes (then PolicyAuthValue if it has an
    /// authorization value). Any other policy is errSecDecode: locket can't satisfy it.
    static func pcrs(of sealed: TSS2KeyFile) throws -> PCRSelection {
        let steps = sealed.policy
        guard let first = steps.first else { return .none }
        let refused = KeychainError(.decode, "the sealed secret's policy is not one locket satisfies (PolicyPCR on SHA-256, then PolicyAuthValue)")
        guard first.commandCode == policyPCR else { throw refused }
        let expected = sealed.emptyAuth ? 1 : 2
        guard steps.count == expected, steps.dropFirst().allSatisfy({ $0.commandCode == policyAuthValue && $0.commandPolicy.isEmpty }) else { throw refused }
        // TPM2B_DIGEST pcrDigest, then TPML_PCR_SELECTION with one SHA-256 selection of 3 bytes.
        let body = first.commandPolicy
        guard body.count >= 2 else { throw refused }
        let digestSize = Int(body[0]) << 8 | Int(body[1])
        let selection = Array(body.dropFirst(2 + digestSize))
        guard digestSize <= 32, selection.count == 10, selection[0..<4] == [0, 0, 0, 1], selection[4..<7] == [0x00, 0x0b, 3] else { throw refused }
        let mask = UInt32(selection[7]) | UInt32(selection[8]) << 8 | UInt32(selection[9]) << 16
        guard mask != 0 else { throw refused }
        return PCRSelection(mask: mask)
    }
}
