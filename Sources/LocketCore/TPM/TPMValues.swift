import LocketSupport

// The values the TPM client hands back and takes: what a TPM is (for
// `locket status`), its lockout counters, an authorization value, the PCRs a
// sealed secret is bound to, and a Secure Enclave key read from its key file.

/// What `probe` reads of the TPM.
public struct TPMInfo: Sendable, Equatable {
    /// TPM2_PT_FAMILY_INDICATOR, "2.0".
    public let family: String
    /// The specification revision, e.g. 1.59 as 159.
    public let revision: UInt32
    /// TPM2_PT_MANUFACTURER as its four characters ("IFX", "STM ", "IBM", "MSFT").
    public let manufacturer: String
    /// The vendor strings, joined ("SLB9670", "SW TPM").
    public let vendor: String
    /// TPM2_PT_FIRMWARE_VERSION_1 and _2.
    public let firmware: (UInt32, UInt32)
    /// Whether the TPM has the NIST P-256 curve (Secure Enclave keys need it).
    public let hasP256: Bool

    /// The firmware as vendors print it: the two halves of each word, "7.85.4555.0" (Infineon's form).
    public var firmwareVersion: String {
        "\(firmware.0 >> 16).\(firmware.0 & 0xffff).\(firmware.1 >> 16).\(firmware.1 & 0xffff)"
    }

    public static func == (a: TPMInfo, b: TPMInfo) -> Bool {
        a.family == b.family && a.revision == b.revision && a.manufacturer == b.manufacturer && a.vendor == b.vendor
            && a.firmware == b.firmware && a.hasP256 == b.hasP256
    }

    /// Four bytes of a property as text, trailing NULs and spaces dropped, anything unprintable as "?".
    static func text(_ words: [UInt32]) -> String {
        // Loops and typed closures: as nested closures of literals this took the type checker a third of a second.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(4 * words.count)
        for word in words {
            for shift: UInt32 in [24, 16, 8, 0] { bytes.append(UInt8(truncatingIfNeeded: word >> shift)) }
        }
        let printable: [Character] = bytes.prefix { (byte: UInt8) -> Bool in byte != 0 }.map { (byte: UInt8) -> Character in
            byte >= 0x20 && byte < 0x7f ? Character(Unicode.Scalar(byte)) : "?"
        }
        return String(printable).trimmingTrailingSpaces
    }
}

extension String {
    fileprivate var trimmingTrailingSpaces: String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}

/// The TPM's dictionary-attack state (TPM2_PT_LOCKOUT_*, TPMA_PERMANENT inLockout).
public struct TPMLockoutStatus: Sendable, Equatable {
    /// Failed authorizations counted now.
    public let counter: UInt32
    /// Failures at which the TPM locks out.
    public let maxTries: UInt32
    /// Seconds after which one failure is forgotten.
    public let interval: UInt32
    /// Seconds before lockoutAuth may be tried again after it failed.
    public let recovery: UInt32
    /// Whether the TPM refuses DA-protected authorizations now.
    public let inLockout: Bool
}

/// An authorization value for a TPM object (SPEC §21: an application
/// password becomes the key's TPM authorization, so the TPM's
/// dictionary-attack lockout counts the guesses).
public struct TPMAuthorization: Sendable {
    /// The value sent to the TPM: 1 to 32 bytes (the objects' name algorithm's digest size).
    let value: SecureBytes

    /// A password as the authorization value: its bytes when they fit (1 to
    /// 32), so tpm2-openssl's `-passin` and ssh-tpm-agent's PIN prompt take
    /// the same password for the exported key; the SHA-256 of a longer one.
    /// errSecParam for an empty password (an object without one has no authorization value).
    public init(password: SecureBytes) throws {
        guard password.count > 0 else { throw KeychainError(.param, "an empty password is no authorization value: give none") }
        guard password.count > 32 else {
            value = try password.withUnsafeBytes { try SecureBytes(copying: $0) }
            return
        }
        value = try password.withUnsafeBytes { try SecureBytes(copying: Digest.sha256($0)) }
    }
}

/// The SHA-256 bank's PCRs a sealed secret is bound to (PCR 0 to 23).
public struct PCRSelection: Sendable, Equatable {
    /// Bit n: PCR n.
    public let mask: UInt32

    /// No PCR: bound to the TPM alone.
    public static let none = PCRSelection(mask: 0)

    /// errSecParam for a PCR beyond 23.
    public init(_ pcrs: [Int]) throws {
        var mask: UInt32 = 0
        for pcr in pcrs {
            guard (0..<24).contains(pcr) else { throw KeychainError(.param, "PCR \(pcr) is not one of 0-23") }
            mask |= 1 << UInt32(pcr)
        }
        self.mask = mask
    }

    init(mask: UInt32) { self.mask = mask }

    /// The PCRs, in order.
    public var pcrs: [Int] { (0..<24).filter { mask & (1 << UInt32($0)) != 0 } }
}

/// A Secure Enclave key: a P-256 key made in a TPM, known by its key file.
/// Its public key is read from the file; using the private key needs the TPM.
public struct TPMKey: Sendable {
    /// The key file (TSS2 PRIVATE KEY): what the keychain stores.
    public let file: TSS2KeyFile
    /// The public key (SPKI, Apple's 04||X||Y), for verifying, exporting and ECIES encryption.
    public let publicKey: AsymmetricKey
    let publicArea: TPMPublicArea

    /// Whether using the key needs an authorization value (an application password).
    public var needsAuthorization: Bool { !file.emptyAuth }

    /// Reads `file`; errSecDecode unless it is a P-256 signing and key
    /// agreement key fixed to its TPM under the owner hierarchy's storage key.
    public init(_ file: TSS2KeyFile) throws {
        guard file.kind == .loadable else { throw KeychainError(.decode, "the TSS2 key file holds a sealed secret, not a key") }
        guard file.parent == TSS2KeyFile.ownerParent else {
            throw KeychainError(.decode, "the TSS2 key file's parent is the handle 0x\(String(file.parent, radix: 16)); locket loads keys under the owner hierarchy's storage key (0x40000001) only")
        }
        let area = try TPMPublicArea(file.publicArea)
        guard let point = area.p256Point else { throw KeychainError(.decode, "the TSS2 key file does not hold a P-256 key") }
        let required: TPMPublicArea.Attributes = [.fixedTPM, .fixedParent, .sign, .userWithAuth]
        guard area.attributes.isSuperset(of: required), !area.attributes.contains(.restricted) else {
            throw KeychainError(.decode, "the TPM key is not one locket uses: an unrestricted signing key fixed to its TPM, used with its password")
        }
        self.file = file
        publicArea = area
        publicKey = try AsymmetricKey(publicKeyExternalRepresentation: point, keyType: .ec)
    }

    /// Whether the key can do key agreement (ECDH, ECIES decryption); keys locket makes can.
    public var canAgree: Bool { publicArea.attributes.contains(.decrypt) }
}
