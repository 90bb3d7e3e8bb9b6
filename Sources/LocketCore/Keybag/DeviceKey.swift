import Glibc
import LocketSupport

/// The device key binds ThisDeviceOnly items to this machine: a keyed hash of
/// the device secret file (32 random bytes) and `/etc/machine-id`.
enum DeviceKey {
    static let secretLength = 32

    /// The device key, or nil when the secret file does not exist.
    static func load(secretPath: String, machineIDPath: String = "/etc/machine-id") throws -> SecureBytes? {
        guard let secret = try FileIO.readSecret(secretPath, expected: secretLength, what: "the device secret") else { return nil }
        var context = KeyDerivation.Context("locket.device.v1")
        if let id = try? FileIO.readSmall(machineIDPath, limit: 256) {
            context.append(id.filter { $0 != 0x0a })
        }
        return try KeyDerivation.derive(secret, context)
    }

    /// Creates the device secret file if it does not exist yet.
    static func create(secretPath: String) throws {
        if FileIO.exists(secretPath) { return }
        try FileIO.makeDirectories(FileIO.directory(of: secretPath))
        let secret = try SecureBytes(copying: Sodium.random(secretLength))
        // Written whole under a temporary name, then linked into place: a crash
        // never leaves an empty or short device secret behind.
        let temporary = secretPath + ".tmp.\(getpid())"
        unlink(temporary)
        try secret.withUnsafeBytes { try FileIO.writeNew(temporary, $0) }
        defer { unlink(temporary) }
        if let failure = nothingOrErrno("link", { link(temporary, secretPath) }).error, failure.code != EEXIST {
            throw KeychainError(.io, "cannot create \(secretPath): \(failure)")
        }
        // A keychain made next is bound to this secret: its name must not be
        // lost to a power loss that keeps the keychain.
        unlink(temporary)
        try FileIO.syncDirectory(FileIO.directory(of: secretPath))
    }
}
