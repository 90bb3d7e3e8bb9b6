import LocketCore

/// Reads a PKCS#12 file (kSecImportExportPassphrase its password) into
/// memory, as on iOS: one dictionary per identity in `items`, with
/// kSecImportItemIdentity, kSecImportItemCertChain (its certificate first),
/// kSecImportItemLabel and kSecImportItemKeyID. Nothing is added to a
/// keychain: `SecItemAdd([kSecValueRef: identity])` does that (with
/// `kSecAttrIsExtractable: false`, its key never leaves again). A wrong
/// password is errSecAuthFailed; a damaged file errSecDecode; an encoding
/// libcrypto can't read (RC2) errSecParam.
public func SecPKCS12Import(_ pkcs12_data: CFData, _ options: CFDictionary, _ items: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    withStatus {
        var passphrase: SecureBytes?
        for (rawKey, rawValue) in options {
            guard let key = Value.string(rawKey), let value = Value.unwrapped(rawValue) else { continue }
            switch key {
            case "passphrase":
                guard let text = Value.string(value) else { throw Value.wrongType("kSecImportExportPassphrase", "a String") }
                passphrase = try SecureBytes(copying: Array(text.utf8))
            case "memory", "keychain", "access":
                continue  // macOS's kSecImportToMemoryOnly, ...Keychain, ...Access: importing is always to memory here.
            default:
                throw KeychainError(.param, "SecPKCS12Import does not take the option '\(key)'")
            }
        }
        let file = try KeyImport.parse(Array(pkcs12_data as Data), format: .pkcs12) {
            guard let passphrase else { throw KeychainError(.authFailed, "the PKCS#12 file needs kSecImportExportPassphrase") }
            return passphrase
        }
        let chain = file.certificates.filter { $0.keyIndex == nil }.map { SecCertificate($0.certificate) }
        var out: [NSDictionary] = []
        for entry in file.certificates {
            guard let index = entry.keyIndex else { continue }
            let key = file.keys[index]
            let identity = SecIdentity(certificate: SecCertificate(entry.certificate), privateKey: SecKey(key.key))
            var item: [String: Any] = [
                "identity": identity,
                "chain": ([identity.certificate] + chain) as NSArray,
                "keyid": Data(key.key.applicationLabel),
            ]
            if let label = entry.label ?? key.label { item["label"] = label }
            out.append(item as NSDictionary)
        }
        items.pointee = out as NSArray
    }
}
