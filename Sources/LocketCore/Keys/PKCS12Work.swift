import CCrypto

// The key-derivation work a PKCS#12 file asks for, checked before libcrypto
// does any of it (PasswordWork says why). PKCS12_parse derives keys for the
// MAC and for every encrypted safe and shrouded key bag with the counts the
// file gives, so each is read first: the MAC's before any passphrase is
// tried, each safe's before it is decrypted, each key bag's once its safe is
// open (which the safe's own check has bounded).

extension PKCS12File {
    /// The MAC's iteration count: before `PKCS12_verify_mac` runs at all.
    static func checkMACWork(_ p12: OpaquePointer) throws {
        guard PKCS12_mac_present(p12) == 1 else { return }
        var iterations: UnsafePointer<ASN1_INTEGER>?
        PKCS12_get0_mac(nil, nil, nil, &iterations, p12)
        guard let iterations else { return }
        var value: Int64 = 0
        guard ASN1_INTEGER_get_int64(&value, iterations) == 1 else {
            ERR_clear_error()
            throw PasswordWork.tooMany(Int.max, "PKCS#12 file")
        }
        try PasswordWork.check(macIterations: Int(clamping: value), what: "PKCS#12 file")
    }

    /// Every encrypted safe's and shrouded key bag's parameters, decrypting
    /// the safes with `password` (nil: none) as PKCS12_parse will. A safe that
    /// does not open is left to PKCS12_parse, which then fails on it too.
    static func checkEncryptionWork(_ p12: OpaquePointer, password: SecureBytes?) throws {
        guard let safes = PKCS12_unpack_authsafes(p12) else { ERR_clear_error(); return }
        defer { OPENSSL_sk_pop_free(safes) { PKCS7_free($0?.assumingMemoryBound(to: PKCS7.self)) } }
        for i in 0..<OPENSSL_sk_num(safes) {
            let p7 = OPENSSL_sk_value(safes, i)!.assumingMemoryBound(to: PKCS7.self)
            let bags: OpaquePointer?
            switch locket_pkcs7_nid(p7) {
            case NID_pkcs7_data:
                bags = PKCS12_unpack_p7data(p7)
            case NID_pkcs7_encrypted:
                guard let algorithm = locket_pkcs7_encrypted_algorithm(p7) else { continue }
                try PasswordWork.check(algorithmIdentifier: try der(of: algorithm), what: "PKCS#12 file")
                bags = unpack(p7, password)
            default:
                continue
            }
            guard let bags else { ERR_clear_error(); return }
            defer { OPENSSL_sk_pop_free(bags) { PKCS12_SAFEBAG_free(OpaquePointer($0)) } }
            try checkBags(bags, depth: 0)
        }
    }

    /// An encrypted safe's bags. An empty passphrase may have been written as
    /// none or as "": PKCS12_parse picks the one the MAC takes, so both are tried.
    private static func unpack(_ p7: UnsafeMutablePointer<PKCS7>, _ password: SecureBytes?) -> OpaquePointer? {
        guard let password, password.count > 1 else {
            return PKCS12_unpack_p7encdata(p7, nil, 0) ?? PKCS12_unpack_p7encdata(p7, "", 0)
        }
        return password.withUnsafeBytes {
            PKCS12_unpack_p7encdata(p7, $0.baseAddress!.assumingMemoryBound(to: CChar.self), -1)
        }
    }

    private static func checkBags(_ bags: OpaquePointer, depth: Int) throws {
        guard depth < 8 else { throw KeychainError(.decode, "the PKCS#12 file nests its safes too deeply") }
        for i in 0..<OPENSSL_sk_num(bags) {
            let bag = OpaquePointer(OPENSSL_sk_value(bags, i))
            switch PKCS12_SAFEBAG_get_nid(bag) {
            case NID_pkcs8ShroudedKeyBag:
                guard let sig = PKCS12_SAFEBAG_get0_pkcs8(bag) else { continue }
                try checkPKCS8Work(sig, what: "PKCS#12 file")
            case NID_safeContentsBag:
                if let inner = PKCS12_SAFEBAG_get0_safes(bag) { try checkBags(inner, depth: depth + 1) }
            default:
                continue
            }
        }
    }

    /// An EncryptedPrivateKeyInfo's (X509_SIG's) algorithm parameters.
    static func checkPKCS8Work(_ sig: OpaquePointer, what: String) throws {
        var algorithm: UnsafePointer<X509_ALGOR>?
        X509_SIG_get0(sig, &algorithm, nil)
        guard let algorithm else { throw KeychainError(.decode, "the \(what) has no encryption algorithm") }
        try PasswordWork.check(algorithmIdentifier: try der(of: algorithm), what: what)
    }

    private static func der(of algorithm: UnsafePointer<X509_ALGOR>) throws -> [UInt8] {
        try OpenSSL.der("an algorithm identifier", .decode) { i2d_X509_ALGOR(algorithm, $0) }
    }
}
