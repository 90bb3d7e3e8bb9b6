import Glibc
import LocketSupport

/// Where the TPM is: the TCTI configuration `locket-tpm` opens (SPEC §21).
/// Finding it starts nothing: it reads a variable and looks for a device.
public struct TPMLocation: Sendable, Equatable {
    /// What named it.
    public enum Source: Sendable, Equatable {
        /// `LOCKET_TPM`, e.g. `swtpm:host=127.0.0.1,port=2321` or `device:/dev/tpm0`.
        case environment
        /// The kernel's resource manager, `/dev/tpmrm0`.
        case device
    }

    /// The kernel's TPM with its resource manager: what locket opens when nothing else is named.
    public static let defaultDevice = "/dev/tpmrm0"
    /// The TCTIs of a real or emulated TPM. tpm2-tss's loader would dlopen
    /// whatever another name points to, and its `cmd` TCTI runs a command.
    public static let transports: Set<String> = ["device", "swtpm", "mssim", "tabrmd"]

    /// The TCTI configuration.
    public let tcti: String
    public let source: Source

    public init(tcti: String, source: Source) {
        self.tcti = tcti
        self.source = source
    }

    /// `LOCKET_TPM` when set and not empty, else `device` (the kernel's
    /// resource manager) when it exists; otherwise errSecNotAvailable
    /// naming why, with reason `.noTPM`.
    public static func find(environment: Environment, device: String = defaultDevice) throws -> TPMLocation {
        if let named = try environment["LOCKET_TPM"], !named.isEmpty {
            let transport = named.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            guard named.utf8.count <= 512, named.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else {
                throw KeychainError(.notAvailable, "LOCKET_TPM is not a TCTI configuration (printable ASCII, at most 512 bytes)", reason: .noTPM)
            }
            guard transports.contains(transport) else {
                throw KeychainError(.notAvailable, "LOCKET_TPM names the TCTI '\(Printable.clip(transport, max: 40))'; locket opens device, swtpm, mssim and tabrmd", reason: .noTPM)
            }
            return TPMLocation(tcti: named, source: .environment)
        }
        var info = stat()
        guard stat(device, &info) == 0 else {
            throw KeychainError(.notAvailable, "no TPM was found: \(device) does not exist and LOCKET_TPM is not set", reason: .noTPM)
        }
        return TPMLocation(tcti: "device:\(device)", source: .device)
    }
}
