import CLocketSystem
import Glibc
import LocketCore

/// Exit statuses and process hardening.
package enum Diagnostics {
    /// The OSStatus modulo 256, as `security(1)` exits.
    static func exitStatus(_ error: KeychainError) -> Int32 {
        Int32(UInt8(truncatingIfNeeded: error.status))
    }

    /// Turns off core dumps before any key is in memory.
    package static func protectProcess() { locket_disable_core_dumps() }
}
