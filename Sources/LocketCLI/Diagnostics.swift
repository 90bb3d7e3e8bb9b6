import CLocketSystem
import Glibc
import LocketCore

/// Exit statuses and process hardening.
enum Diagnostics {
    /// The OSStatus modulo 256, as `security(1)` exits.
    static func exitStatus(_ error: KeychainError) -> Int32 {
        Int32(UInt8(truncatingIfNeeded: error.status))
    }

    /// Turns off core dumps before any key is in memory.
    static func protectProcess() { locket_disable_core_dumps() }
}

/// Zeroes a plain array that held secret bytes (explicit_bzero cannot be optimized away).
func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
}
