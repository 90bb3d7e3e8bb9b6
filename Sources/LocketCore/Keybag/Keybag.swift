import LocketSupport

/// The keychain's wrapped keys: one random key per protection class plus the
/// blind-index key, each wrapped as SPEC §7 describes:
///
/// - `ak`, `ck`: by the password's KEK.
/// - `aku`, `cku`, `akpu`: by a key derived from the KEK *and* the device key.
/// - `dk`: by the device key (opens without a password) and by the KEK (so a
///   copy opened elsewhere with the password recovers it).
/// - `dku`: by the device key only.
/// - `idx`: like `dk`, so lookups and deletes work while locked.
///
/// Wrapping keys are derived per class and keychain, so a wrapped key moved to
/// another row, or into another keychain, does not open.
/// One keybag row: a class key wrapped by the password's KEK and by the
/// device key (either may be absent). A struct, not a tuple: a dictionary of
/// tuples has its type metadata built at run time by every command that
/// opens a keychain (~60 k instructions of a `find`).
package struct KeybagRow {
    package var kek: [UInt8]?
    var device: [UInt8]?

    package init(kek: [UInt8]? = nil, device: [UInt8]? = nil) {
        self.kek = kek
        self.device = device
    }
}

package struct Keybag {
    package static let indexKeyName = "idx"
    static let names = ProtectionClass.allCases.map { $0.rawValue } + [indexKeyName]
    /// The keys the device key wraps.
    static let deviceWrappedNames = [ProtectionClass.always.rawValue, ProtectionClass.alwaysThisDeviceOnly.rawValue, indexKeyName]

    package let keychainID: [UInt8]
    /// nil for a keychain without a password.
    let kdf: KDFParameters?
    package private(set) var rows: [String: KeybagRow]

    var hasPassword: Bool { kdf != nil }

    package init(keychainID: [UInt8], kdf: KDFParameters?, rows: [String: KeybagRow]) {
        self.keychainID = keychainID
        self.kdf = kdf
        self.rows = rows
    }

    // MARK: - Wrapping keys

    private func wrapKey(_ kek: SecureBytes, _ name: String) throws -> SecureBytes {
        try KeyDerivation.derive(kek, KeyDerivation.Context("locket.wrap.kek.v1").with(keychainID).with(name))
    }

    private func deviceBoundWrapKey(_ kek: SecureBytes, _ device: SecureBytes, _ name: String) throws -> SecureBytes {
        let first = try KeyDerivation.derive(device, KeyDerivation.Context("locket.wrap.bind.v1").with(keychainID).with(name))
        return try KeyDerivation.derive(wrapKey(kek, name), KeyDerivation.Context("locket.wrap.tdo.v1").with(first.bytes))
    }

    private func deviceWrapKey(_ device: SecureBytes, _ name: String) throws -> SecureBytes {
        try KeyDerivation.derive(device, KeyDerivation.Context("locket.wrap.device.v1").with(keychainID).with(name))
    }

    /// The KEK of a keychain without a password. Such a keychain is as open as
    /// a device without a passcode: only the device-bound classes are protected.
    static func passwordlessKEK(_ keychainID: [UInt8]) throws -> SecureBytes {
        try KeyDerivation.derive(try SecureBytes(count: 32), KeyDerivation.Context("locket.nopass.v1").with(keychainID))
    }

    func kek(password: SecureBytes?) throws -> SecureBytes {
        guard let kdf else { return try Keybag.passwordlessKEK(keychainID) }
        guard let password else { throw KeychainError(.authFailed) }
        return try PasswordHash.deriveKEK(password: password, parameters: kdf)
    }

    // MARK: - Creating

    /// Fresh random keys for a new keychain, wrapped for `kek` and `device`.
    static func create(keychainID: [UInt8], kdf: KDFParameters?, kek: SecureBytes, device: SecureBytes) throws -> (Keybag, SessionKeys) {
        var bag = Keybag(keychainID: keychainID, kdf: kdf, rows: [:])
        var keys = SessionKeys()
        for name in names {
            if name == ProtectionClass.whenPasscodeSetThisDeviceOnly.rawValue && kdf == nil { continue }
            keys.set(name, try SecureBytes(copying: Sodium.random(32)))
        }
        try bag.wrap(keys, kek: kek, device: device)
        return (bag, keys)
    }

    /// Re-wraps every key in `keys` (a password change wraps the same class keys anew).
    mutating func wrap(_ keys: SessionKeys, kek: SecureBytes?, device: SecureBytes?) throws {
        for (name, key) in keys.entries {
            var row = rows[name] ?? KeybagRow()
            let pclass = ProtectionClass(rawValue: name)
            let isAlways = name == Keybag.indexKeyName || pclass?.tier == .always
            if let kek, pclass != .alwaysThisDeviceOnly {
                if pclass?.thisDeviceOnly == true {
                    if let device { row.kek = SecretBox.seal(key, key: try deviceBoundWrapKey(kek, device, name)) }
                } else {
                    row.kek = SecretBox.seal(key, key: try wrapKey(kek, name))
                }
            }
            if let device, isAlways {
                row.device = SecretBox.seal(key, key: try deviceWrapKey(device, name))
            }
            rows[name] = row
        }
    }

    mutating func removeRow(_ name: String) { rows[name] = nil }

    /// Wraps a presence secret key (PresenceKeys) by the KEK alone: no device
    /// wrap, so only the password opens it.
    mutating func wrapPresence(_ name: String, _ secretKey: SecureBytes, kek: SecureBytes) throws {
        rows[name] = KeybagRow(kek: SecretBox.seal(secretKey, key: try wrapKey(kek, name)))
    }

    /// The presence secret key `name`, nil when the keychain has none (made
    /// before access control, or its password was removed).
    func unwrapPresence(_ name: String, kek: SecureBytes) throws -> SecureBytes? {
        guard let sealed = rows[name]?.kek else { return nil }
        return try SecretBox.open(sealed, key: wrapKey(kek, name), what: "a presence key")
    }

    // MARK: - Unwrapping

    /// The keys that open with the device key alone (`dk`, `dku`, `idx`).
    /// With `besidesKEK` (a keychain without a password, whose KEK opens its
    /// keys next), only those the KEK does not wrap, or wraps bound to a
    /// device: opening `always` and the index key twice cost every command
    /// two key derivations and two XSalsa20-Poly1305 opens.
    func unwrapWithDevice(_ device: SecureBytes, besidesKEK: Bool = false) -> SessionKeys {
        var keys = SessionKeys()
        for name in Keybag.deviceWrappedNames {
            if besidesKEK, rows[name]?.kek != nil, ProtectionClass(rawValue: name)?.thisDeviceOnly != true { continue }
            guard let sealed = rows[name]?.device,
                  let key = try? SecretBox.open(sealed, key: deviceWrapKey(device, name), what: "key") else { continue }
            keys.set(name, key)
        }
        return keys
    }

    /// Every key the KEK opens. A wrong password opens none of the migratable
    /// ones (errSecAuthFailed); some opening and others not means the keybag
    /// was altered (errSecDecode). Device-bound keys that do not open belong to
    /// another device and are left out.
    /// A public fingerprint of the device key, kept in the header: it tells
    /// "bound to another device" apart from "altered".
    static func deviceFingerprint(_ device: SecureBytes, keychainID: [UInt8]) -> [UInt8] {
        KeyDerivation.digest(device, KeyDerivation.Context("locket.device-fingerprint.v1").with(keychainID))
    }

    /// The device-bound classes this keychain has keys for.
    var deviceBoundNames: [String] {
        ProtectionClass.allCases.filter { $0.thisDeviceOnly }.map { $0.rawValue }
            .filter { $0 != ProtectionClass.whenPasscodeSetThisDeviceOnly.rawValue || hasPassword }
    }

    /// With `sameDevice`, a device-bound key that does not open was altered (errSecDecode);
    /// otherwise it belongs to another device and is left out.
    func unwrapWithKEK(_ kek: SecureBytes, device: SecureBytes?, sameDevice: Bool = false) throws -> SessionKeys {
        var keys = SessionKeys()
        var opened = 0, failed = 0, deviceBoundFailed = 0
        for name in Keybag.names {
            guard let sealed = rows[name]?.kek else { continue }
            let key = openKEKWrap(sealed, name, kek: kek, device: device)
            if let key { keys.set(name, key) }
            if ProtectionClass(rawValue: name)?.thisDeviceOnly == true {
                if key == nil && sameDevice { deviceBoundFailed += 1 }
            } else if key != nil {
                opened += 1
            } else {
                failed += 1
            }
        }
        if opened == 0 { throw KeychainError(.authFailed) }
        if failed > 0 || deviceBoundFailed > 0 { throw Keybag.altered }
        return keys
    }

    static var altered: KeychainError { KeychainError(.decode, "the keychain's wrapped class keys were altered") }

    /// `sealed`, the KEK's wrap of `name`, opened (a device-bound class's
    /// bound to `device` as well); nil when it does not open.
    private func openKEKWrap(_ sealed: [UInt8], _ name: String, kek: SecureBytes, device: SecureBytes?) -> SecureBytes? {
        if ProtectionClass(rawValue: name)?.thisDeviceOnly == true {
            guard let device else { return nil }
            return try? SecretBox.open(sealed, key: deviceBoundWrapKey(kek, device, name), what: "key")
        }
        return try? SecretBox.open(sealed, key: wrapKey(kek, name), what: "key")
    }

    /// One key, opened as `loadKeys` opens it with the rest at once: by the
    /// passwordless KEK (`kek`, a keychain without a password) where it
    /// wraps it, as `unwrapWithKEK` does, else by the device, as
    /// `unwrapWithDevice` does (nil when that does not open). A migratable
    /// class's key the KEK does not open was altered (errSecDecode); a
    /// device-bound one is another device's (nil).
    func unwrap(_ name: String, kek: SecureBytes?, device: SecureBytes) throws -> SecureBytes? {
        guard let row = rows[name] else { return nil }
        if let kek, let sealed = row.kek {
            if let key = openKEKWrap(sealed, name, kek: kek, device: device) { return key }
            if ProtectionClass(rawValue: name)?.thisDeviceOnly == true { return nil }
            throw Keybag.altered
        }
        guard Keybag.deviceWrappedNames.contains(name), let sealed = row.device else { return nil }
        return try? SecretBox.open(sealed, key: deviceWrapKey(device, name), what: "key")
    }
}

/// KDF parameters as stored in the meta table: salt (16), ops (8), mem (8).
extension KDFParameters {
    var encoded: [UInt8] {
        var out = salt
        BigEndian.append(opsLimit, to: &out)
        BigEndian.append(memLimit, to: &out)
        return out
    }

    package init?(encoded b: [UInt8]) {
        guard b.count == 32 else { return nil }
        self.init(opsLimit: BigEndian.value(b[16..<24]), memLimit: BigEndian.value(b[24..<32]), salt: Array(b[0..<16]))
        guard isValid else { return nil }
    }
}
