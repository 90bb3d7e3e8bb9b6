import Glibc
import LocketWire

/// The TCTI configurations the helper opens. tpm2-tss's loader would
/// dlopen whatever library a name points to (and the `cmd` TCTI runs a
/// command), so only the transports of a real or emulated TPM are taken.
enum TCTI {
    /// The TCTIs a TPM is reached through: the kernel's device, swtpm, the
    /// Microsoft simulator, and the access broker.
    static let names: Set<String> = ["device", "swtpm", "mssim", "tabrmd"]

    /// Why `configuration` is refused; nil when it may be opened.
    static func refusal(_ configuration: String) -> String? {
        let name = configuration.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        guard names.contains(name) else {
            return "the TCTI '\(printable(name))' is not one locket opens (device, swtpm, mssim, tabrmd)"
        }
        guard configuration.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else {
            return "the TCTI configuration has a character that is not printable ASCII"
        }
        return nil
    }

    /// For the device TCTI, why its device can't be opened (absent, not
    /// ours to open), worded before tpm2-tss hides the errno.
    static func missingDevice(_ configuration: String) -> String? {
        guard configuration.hasPrefix("device") else { return nil }
        let parts = configuration.split(separator: ":", maxSplits: 1)
        let path = parts.count == 2 && !parts[1].isEmpty ? String(parts[1]) : "/dev/tpm0"
        guard access(path, R_OK | W_OK) != 0 else { return nil }
        switch errno {
        case ENOENT: return "there is no TPM: \(path) does not exist"
        case EACCES, EPERM: return "\(path) is not open to this user (on Debian, the tss group may open it)"
        case let code: return "\(path) can't be opened (errno \(code))"
        }
    }

    private static func printable(_ text: String) -> String {
        String(text.unicodeScalars.map { $0.value >= 0x20 && $0.value < 0x7f ? Character($0) : "?" }.prefix(40))
    }
}
