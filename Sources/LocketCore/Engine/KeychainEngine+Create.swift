import Glibc
import LocketSupport

/// A place a new keychain is made in (`init`): what each kind of storage
/// does before its keychain exists. The keys, the keybag and the header
/// are the engine's, made once for every kind (`KeychainEngine.create(in:)`).
package protocol KeychainPlace {
    /// Where, for messages: a path, a URL.
    var address: String { get }
    /// What holds it, named in messages ("the file").
    var medium: String { get }
    /// What the keychain made here will decide (its storage's policy).
    var policy: StoragePolicy { get }
    var headerLayout: Header.Layout { get }
    /// Refuses before anything is asked or made: a keychain there already.
    func checkVacant() throws
    /// Readies what the keychain needs before its keys are made (its
    /// directory, a connection and a schema), judged as opening will judge it.
    func prepare(environment: Environment) throws
    /// Makes the keychain, all or nothing, from its header rows (sealed) and
    /// keybag; returns its storage. errSecDuplicateKeychain when one is there.
    func make(header: [(String, [UInt8])], keybag: Keybag, environment: Environment) throws -> any KeychainStorage
}

extension KeychainEngine {
    /// Creates a keychain in `place` with `password` (nil: no password,
    /// where the place allows it), hashed with Argon2id at `kdf`. The caller
    /// chooses the cost: the command line never passes less than
    /// `.interactive`. With a password the creator has just proven it: the
    /// keychain starts unlocked, as iOS does after a passcode is set.
    /// With `tpm` the keychain is bound to this machine's TPM
    /// (KeychainEngine+TPMBinding): the TPM seals its secret before anything is made.
    static func create(in place: some KeychainPlace, password: SecureBytes?, kdf cost: KDFCost, environment: Environment,
                       sessionTimeout: UInt32? = nil, tpm: Bool = false) throws {
        try Sodium.ready()
        try place.checkVacant()
        if let password, password.count == 0 {
            throw KeychainError(.param, "the password is empty", reason: .emptyPassword)
        }
        let policy = place.policy
        if password == nil && policy.requiresPassword {
            throw KeychainError(.param, "a keychain in \(place.address) needs a password: without one its keys would open for whoever reads the \(place.medium)")
        }
        // Every variable the new keychain needs is read before anything is made.
        let devicePath = policy.wrapsKeysForDevice ? try environment.deviceSecretPath() : nil
        _ = try SessionStore(environment: environment, keychainID: [])
        var binding: (secret: SecureBytes, sealed: [UInt8])?
        if tpm {
            try KeychainSession.checkTPMBinding(policy: policy, hasPassword: password != nil, address: place.address)
            binding = try newTPMBinding(environment: environment)
        }
        try place.prepare(environment: environment)
        // `machineDevice` keys this machine's generation mirror; `device` wraps the keybag (mixed with T when bound).
        var device: SecureBytes?, machineDevice: SecureBytes?
        if let devicePath {
            try DeviceKey.create(secretPath: devicePath)
            guard let key = try DeviceKey.load(secretPath: devicePath) else {
                throw KeychainError(.io, "cannot read the device secret \(devicePath)")
            }
            machineDevice = key
            device = key
        }
        let id = Sodium.random(16)
        let kdf: KDFParameters? = password == nil ? nil : KDFParameters(cost: cost)
        var kek = try password.map { try PasswordHash.deriveKEK(password: $0, parameters: kdf!) } ?? Keybag.passwordlessKEK(id)
        if let binding {
            kek = try bind(kek: kek, to: binding.secret, keychainID: id)
            device = try device.map { try bind(device: $0, to: binding.secret, keychainID: id) }
        }
        var bag = Keybag(keychainID: id, kdf: kdf, rows: [:])
        var keys = SessionKeys()
        for name in Keybag.names {
            let pclass = ProtectionClass(rawValue: name)
            // ThisDeviceOnly keys are wrapped for a device; when-passcode-set needs a passcode.
            if pclass?.thisDeviceOnly == true && device == nil { continue }
            if pclass == .whenPasscodeSetThisDeviceOnly && kdf == nil { continue }
            keys.set(name, try SecureBytes(copying: Sodium.random(32)))
        }
        try bag.wrap(keys, kek: kek, device: device)
        var meta: [(String, [UInt8])] = [(MetaKey.format.rawValue, BigEndian.bytes(policy.format)), (MetaKey.id.rawValue, id)]
        if let device { meta.append((MetaKey.deviceFingerprint.rawValue, Keybag.deviceFingerprint(device, keychainID: id))) }
        if let binding { meta.append((MetaKey.tpm.rawValue, binding.sealed)) }
        if let kdf {
            meta.append((MetaKey.kdf.rawValue, kdf.encoded))
            // The presence key pairs of access control (SPEC §14), with a password only.
            for name in PresenceKeys.names {
                let (publicKey, secretKey) = try PresenceKeys.generate()
                try bag.wrapPresence(name, secretKey, kek: kek)
                meta.append((PresenceKeys.publicKeyRow(name).rawValue, publicKey))
            }
        }
        guard let indexKey = keys[Keybag.indexKeyName] else { throw KeychainError(.io, "no blind-index key was made") }
        let header = meta + (try Header(meta: Dictionary(uniqueKeysWithValues: meta), keybag: bag.rows, layout: place.headerLayout)
            .sealed(generation: 1, indexKey: indexKey, keychainID: id))
        let storage = try place.make(header: header, keybag: bag, environment: environment)
        try storage.rollbackRecords?.generationMirror(keychainID: id, environment: environment, device: machineDevice, indexKey: indexKey)?.raise(to: 1)
        if password != nil {
            let keychain = try KeychainEngine(storage: storage, caller: .owner, environment: environment, keybag: bag,
                                        meta: Dictionary(uniqueKeysWithValues: header))
            keychain.tpmSecret = binding?.secret
            try keychain.saveSession(keys, timeout: sessionTimeout ?? keychain.defaultTimeout)
        }
    }
}
