import CLocketTPM
import LocketWire

/// What a TSS2 response code means for the client, by the step it came from.
enum Classification {
    private static let tctiLayer: UInt32 = 10 << 16
    private static let layerMask: UInt32 = 0xff << 16
    private static let format1: UInt32 = 0x080
    private static let warning: UInt32 = 0x900

    /// The TPM's own code without the handle, session or parameter number
    /// (format 1) it was tagged with.
    static func base(_ code: UInt32) -> UInt32 {
        guard code & layerMask == 0 else { return code }
        return code & format1 != 0 ? code & 0xbf : code & 0xfff
    }

    static func classify(_ code: UInt32, stage: Int32) -> (TPMWire.Failure, String) {
        let what = text(code)
        if code & layerMask == tctiLayer {
            return stage == LOCKET_TPM_STAGE_CONNECT
                ? (.unavailable, "no TPM answers (\(what))")
                : (.lost, "the TPM stopped answering (\(what))")
        }
        if stage == LOCKET_TPM_STAGE_INPUT {
            return (.badRequest, "the TPM object is malformed or of the wrong kind (\(what))")
        }
        guard code & layerMask == 0 else { return (.tpm, what) }
        switch base(code) {
        case 0x08e /* AUTH_FAIL */, 0x0a2 /* BAD_AUTH */:
            if stage == LOCKET_TPM_STAGE_PARENT {
                return (.unavailable, "the TPM's owner hierarchy has an authorization value: locket makes its storage key without one (\(what))")
            }
            return (.authorization, "the TPM refused the authorization value (\(what))")
        case 0x921 /* LOCKOUT */:
            return (.lockout, "the TPM is in dictionary-attack lockout (\(what))")
        case 0x09f /* INTEGRITY */ where stage == LOCKET_TPM_STAGE_LOAD, 0x0a5 /* BINDING */ where stage == LOCKET_TPM_STAGE_LOAD:
            return (.otherTPM, "the object was not made by this TPM (another TPM's, this one's before a clear, or damaged) (\(what))")
        case 0x09d /* POLICY_FAIL */, 0x128 /* PCR_CHANGED */:
            return (.policy, "the PCR values differ from those the secret was sealed to (\(what))")
        case 0x084 /* VALUE */ where stage == LOCKET_TPM_STAGE_POLICY:
            return (.policy, "the PCR values differ from those the secret was sealed to (\(what))")
        case 0x902, 0x903, 0x904, 0x905, 0x906 /* OBJECT/SESSION MEMORY, MEMORY, HANDLES */:
            return (.resources, "the TPM has no room for another object or session (\(what))")
        case 0x0a6 /* CURVE */:
            return (.resources, "the TPM does not support P-256 (\(what))")
        default:
            return (.tpm, what)
        }
    }

    /// tpm2-tss's words for a code, as one printable line.
    static func text(_ code: UInt32) -> String {
        guard let decoded = locket_tpm_rc_text(code) else { return "TPM response 0x\(String(code, radix: 16))" }
        let line = String(cString: decoded).unicodeScalars.map { $0.value >= 0x20 && $0.value < 0x7f ? Character($0) : "?" }
        return "\(String(line.prefix(200))), 0x\(String(code, radix: 16))"
    }
}
