import LocketCore
import CSodium
import LocketSupport

/// This machine's device in one remote keychain (SPEC §17 "Devices"): its id
/// in `locket.devices`, its X25519 secret key and its Ed25519 signing seed,
/// kept in the local device state (`$XDG_STATE_HOME/locket/remote-ID.device`,
/// 0600), never in the database. Group keys are sealed (crypto_box_seal) to
/// its X25519 public key; what it publishes (the signed membership, the
/// state of the items, its audit entries) it signs with the Ed25519 key.
struct DeviceIdentity {
    let id: Int64
    let secretKey: SecureBytes
    let publicKey: [UInt8]
    let signingSeed: SecureBytes
    let signingKey: [UInt8]

    static let size = 8 + 32 + 32

    static func path(keychainID: [UInt8], environment: Environment) throws -> String {
        try environment.stateDirectory() + "/locket/remote-" + Hex.encode(keychainID) + ".device"
    }

    /// A fresh key pair (the id comes from the database).
    static func generateSecretKey() throws -> SecureBytes { try SecureBytes(copying: Sodium.random(32)) }

    init(id: Int64, secretKey: SecureBytes, signingSeed: SecureBytes) throws {
        self.id = id
        self.secretKey = secretKey
        publicKey = try BackupRecipients.publicKey(secretKey: secretKey)
        self.signingSeed = signingSeed
        signingKey = try DeviceSigning.publicKey(seed: signingSeed)
    }

    /// Both secret keys of a new device (its id comes from the database).
    static func generate(id: Int64) throws -> DeviceIdentity {
        try DeviceIdentity(id: id, secretKey: generateSecretKey(), signingSeed: generateSecretKey())
    }

    /// The same keys under the id the database gave them.
    func with(id: Int64) throws -> DeviceIdentity { try DeviceIdentity(id: id, secretKey: secretKey, signingSeed: signingSeed) }

    func fingerprint(keychainID: [UInt8]) -> DeviceFingerprint {
        DeviceFingerprint(keychainID: keychainID, encryptionKey: publicKey, signingKey: signingKey)
    }

    func sign(_ message: [UInt8]) throws -> [UInt8] { try DeviceSigning.sign(message, seed: signingSeed) }

    /// This machine's device for the keychain, nil when it never enrolled.
    static func load(keychainID: [UInt8], environment: Environment) throws -> DeviceIdentity? {
        let file = try path(keychainID: keychainID, environment: environment)
        guard let stored = try FileIO.readSecret(file, expected: size, what: "the enrolled device's key") else { return nil }
        let id = stored.withUnsafeBytes { BigEndian.int64(Array($0.prefix(8))) }
        return try stored.withUnsafeBytes {
            try DeviceIdentity(id: id, secretKey: SecureBytes(copying: UnsafeRawBufferPointer(rebasing: $0[8..<40])),
                               signingSeed: SecureBytes(copying: UnsafeRawBufferPointer(rebasing: $0[40..<72])))
        }
    }

    /// Keeps the device in the local state; errSecDuplicateKeychain when one is there.
    func save(keychainID: [UInt8], environment: Environment) throws {
        let file = try DeviceIdentity.path(keychainID: keychainID, environment: environment)
        try FileIO.makeDirectories(FileIO.directory(of: file))
        let stored = try SecureBytes(count: DeviceIdentity.size)
        stored.withUnsafeMutableBytes { out in
            let id = BigEndian.bytes(self.id)
            for i in 0..<8 { out[i] = id[i] }
            secretKey.withUnsafeBytes { key in for i in 0..<32 { out[8 + i] = key[i] } }
            signingSeed.withUnsafeBytes { seed in for i in 0..<32 { out[40 + i] = seed[i] } }
        }
        try stored.withUnsafeBytes { try FileIO.writeNew(file, $0) }
    }

    /// `key` sealed to `publicKey` (anyone can seal; only that device opens).
    static func seal(_ key: SecureBytes, to publicKey: [UInt8]) throws -> [UInt8] {
        try SealedBox.seal(key, to: publicKey)
    }

    /// Opens a group key sealed to this device; errSecDecode when it doesn't open.
    func open(_ sealed: [UInt8]) throws -> SecureBytes {
        guard sealed.count == SealedBox.sealBytes + 32 else { throw KeychainError(.decode, "a wrapped group key has the wrong size") }
        guard let key = try SealedBox.open(sealed, publicKey: publicKey, secretKey: secretKey) else {
            throw KeychainError(.decode, "a group key wrapped for this device does not open: the database was altered")
        }
        return key
    }
}
