import CCrypto
import LocketSupport

// `import FILE|-` without the storage: detect the format (or take the forced
// one), parse every key and certificate in the file, and say which key each
// certificate belongs to. Each failure is one KeychainError: errSecDecode for
// malformed input, errSecAuthFailed for a wrong passphrase, errSecParam for
// something locket does not support.

/// The file formats `import --format` names.
public enum KeyFileFormat: String, Sendable, CaseIterable {
    /// PKCS#12 (.p12, .pfx), DER.
    case pkcs12
    /// PEM text, one or more blocks.
    case pem
    /// One DER object: certificate, PKCS#8 (plain or encrypted), SPKI, or a traditional RSA/EC key.
    case der
    /// An OpenSSH private key (openssh-key-v1) or public key line.
    case openssh

    /// The format called `name`, or errSecParam listing the choices.
    public static func named(_ name: String) throws -> KeyFileFormat {
        guard let format = KeyFileFormat(rawValue: name.lowercased()) else {
            throw KeychainError(.param, "unknown format '\(name)' (choose one of \(allCases.map { $0.rawValue }.joined(with: ", ")))")
        }
        return format
    }
}

/// A key found in an imported file.
public struct ImportedKey: Sendable {
    /// The key (private or public).
    public let key: AsymmetricKey
    /// The label the file gives it (PKCS#12 friendly name, OpenSSH comment); nil when none.
    public let label: String?
}

/// A certificate found in an imported file.
public struct ImportedCertificate: Sendable {
    /// The certificate.
    public let certificate: Certificate
    /// The label the file gives it (PKCS#12 friendly name); nil when none.
    public let label: String?
    /// The index in `ImportedItems.keys` of the private key it forms an identity with; nil when none.
    public let keyIndex: Int?
}

/// Everything an imported file holds.
public struct ImportedItems: Sendable {
    /// Keys, in file order.
    public internal(set) var keys: [ImportedKey] = []
    /// Certificates, in file order (for PKCS#12: the key's certificate, then the chain).
    public internal(set) var certificates: [ImportedCertificate] = []
    /// The format the file was read as.
    public internal(set) var format: KeyFileFormat = .der
}

/// Parsing of key and certificate files.
public enum KeyImport {
    /// The largest file `import` reads, as large as the largest secret.
    public static let maximumInputLength = 16 * 1024 * 1024

    /// Parses `data`. `format` nil: detected. `passphrase` is called at most
    /// once, only when the file is encrypted (the CLI prompts, or reads
    /// stdin). Throws errSecDecode (malformed, truncated, unrecognized),
    /// errSecAuthFailed (wrong passphrase), errSecParam (unsupported type or
    /// algorithm, a private key that matches none of the file's
    /// certificates), errSecDataTooLarge (over 16 MiB).
    public static func parse(_ data: SecureBytes, format: KeyFileFormat? = nil, passphrase: @escaping () throws -> SecureBytes) throws -> ImportedItems {
        try data.withUnsafeBytes { try parse(raw: $0, format: format, passphrase: passphrase) }
    }

    /// Parses public data (certificates, public keys); a private key in it is read all the same.
    public static func parse(_ data: [UInt8], format: KeyFileFormat? = nil, passphrase: @escaping () throws -> SecureBytes) throws -> ImportedItems {
        try data.withUnsafeBytes { try parse(raw: $0, format: format, passphrase: passphrase) }
    }

    /// The format `data` looks like, or nil.
    public static func detectFormat(_ data: [UInt8]) -> KeyFileFormat? {
        data.withUnsafeBytes { detect($0) }
    }

    static func detect(_ bytes: UnsafeRawBufferPointer) -> KeyFileFormat? {
        if OpenSSHKeyFile.hasMagic(bytes) || startsWithSSHPublicKey(bytes) { return .openssh }
        if PEM.contains(bytes) {
            // An OpenSSH private key is PEM-armoured; so is anything else.
            return .pem
        }
        guard bytes.first == 0x30 else { return nil }
        try? OpenSSL.ready()
        var p: UnsafePointer<UInt8>? = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
        if let p12 = d2i_PKCS12(nil, &p, bytes.count) {
            PKCS12_free(p12)
            if p == bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + bytes.count { return .pkcs12 }
        }
        ERR_clear_error()
        return .der
    }

    private static func startsWithSSHPublicKey(_ bytes: UnsafeRawBufferPointer) -> Bool {
        for prefix in ["ssh-ed25519 ", "ssh-rsa ", "ecdsa-sha2-nistp"] {
            let p = Array(prefix.utf8)
            if bytes.count > p.count && zip(bytes.prefix(p.count), p).allSatisfy({ $0 == $1 }) { return true }
        }
        return false
    }

    static func parse(raw bytes: UnsafeRawBufferPointer, format forced: KeyFileFormat?, passphrase: @escaping () throws -> SecureBytes) throws -> ImportedItems {
        guard bytes.count <= maximumInputLength else {
            throw KeychainError(.dataTooLarge, "the file is larger than \(ByteSize.text(maximumInputLength))")
        }
        guard !bytes.isEmpty else { throw KeychainError(.decode, "the file is empty") }
        guard let format = forced ?? detect(bytes) else {
            throw KeychainError(.decode, "unrecognized format (not PKCS#12, PEM, DER or an OpenSSH key)")
        }
        try OpenSSL.ready()
        let asker = PassphraseCache(passphrase)
        var items = ImportedItems()
        items.format = format
        var keys: [ImportedKey] = []
        var certificates: [(Certificate, String?)] = []
        switch format {
        case .pkcs12:
            let contents = try PKCS12File.read(bytes, passphrase: asker.get)
            if let key = contents.key { keys.append(ImportedKey(key: key, label: contents.label)) }
            if let certificate = contents.certificate { certificates.append((certificate, contents.label)) }
            if contents.key != nil, contents.certificate == nil, !contents.chain.isEmpty {
                throw KeychainError(.param, "the PKCS#12 file's private key matches none of its certificates")
            }
            certificates += contents.chain.map { ($0, nil) }
        case .pem:
            let blocks = try PEM.blocks(in: bytes)
            guard !blocks.isEmpty else { throw KeychainError(.decode, "no PEM block in the file") }
            for block in blocks {
                try readPEM(block, bytes, asker, &keys, &certificates)
            }
        case .der:
            try readDER(bytes, asker, &keys, &certificates)
        case .openssh:
            if startsWithSSHPublicKey(bytes) {
                guard let line = String(validating: bytes, as: UTF8.self) else { throw KeychainError(.decode, "the OpenSSH public key is not text") }
                let (key, comment) = try AsymmetricKey.parseOpenSSHPublicKey(line)
                keys.append(ImportedKey(key: key, label: comment))
            } else if OpenSSHKeyFile.hasMagic(bytes) {
                keys += try OpenSSHKeyFile.read(bytes, passphrase: asker.get).map { ImportedKey(key: $0.key, label: $0.comment.isEmpty ? nil : $0.comment) }
            } else {
                let blocks = try PEM.blocks(in: bytes).filter { $0.label == OpenSSHKeyFile.pemLabel }
                guard !blocks.isEmpty else { throw KeychainError(.decode, "no OpenSSH private key in the file") }
                for block in blocks { try readPEM(block, bytes, asker, &keys, &certificates) }
            }
        }
        guard !keys.isEmpty || !certificates.isEmpty else { throw KeychainError(.decode, "the file holds no key or certificate") }
        items.keys = keys
        items.certificates = certificates.map { certificate, label in
            let index = keys.firstIndex { $0.key.keyClass == .private && certificate.matches($0.key) }
            return ImportedCertificate(certificate: certificate, label: label, keyIndex: index)
        }
        // A private key next to certificates none of which is its own is
        // most often the wrong pair of files: refuse it rather than store half an identity.
        if !certificates.isEmpty {
            for (i, key) in keys.enumerated() where key.key.keyClass == .private {
                guard items.certificates.contains(where: { $0.keyIndex == i }) else {
                    throw KeychainError(.param, "the private key \(i + 1) matches none of the file's certificates (its application label is \(Hex.encode(key.key.applicationLabel)))")
                }
            }
        }
        return items
    }

    private static func readPEM(_ block: PEM.Block, _ bytes: UnsafeRawBufferPointer, _ asker: PassphraseCache,
                                _ keys: inout [ImportedKey], _ certificates: inout [(Certificate, String?)]) throws {
        switch block.label {
        case "EC PARAMETERS":
            // `openssl ecparam -genkey` writes the curve before the key; the key names it too.
            return
        case "RSA PRIVATE KEY", "EC PRIVATE KEY":
            if block.hasHeaders {
                keys.append(ImportedKey(key: try encryptedTraditional(block, bytes, asker), label: nil))
                return
            }
        default:
            break
        }
        guard !block.hasHeaders else { throw KeychainError(.param, "PEM block '\(block.label)' has headers locket does not read") }
        let der = try PEM.decode(block, in: bytes)
        try der.withUnsafeBytes { der in
            switch block.label {
            case "CERTIFICATE", "X509 CERTIFICATE":
                certificates.append((try Certificate(der: Array(der)), nil))
            case "TRUSTED CERTIFICATE":
                certificates.append((try trustedCertificate(der), nil))
            case "PRIVATE KEY":
                keys.append(ImportedKey(key: try AsymmetricKey(evp: EVPKey(pkcs8: der), isPrivate: true), label: nil))
            case "ENCRYPTED PRIVATE KEY":
                keys.append(ImportedKey(key: try AsymmetricKey(evp: PKCS12File.decryptPKCS8(der, passphrase: try asker.get()), isPrivate: true), label: nil))
            case "RSA PRIVATE KEY":
                keys.append(ImportedKey(key: try traditional(der, EVP_PKEY_RSA, "RSA"), label: nil))
            case "EC PRIVATE KEY":
                keys.append(ImportedKey(key: try traditional(der, EVP_PKEY_EC, "EC"), label: nil))
            case "PUBLIC KEY":
                keys.append(ImportedKey(key: try AsymmetricKey(evp: EVPKey(spki: der), isPrivate: false), label: nil))
            case "RSA PUBLIC KEY":
                keys.append(ImportedKey(key: try AsymmetricKey(publicKeyExternalRepresentation: Array(der), keyType: .rsa), label: nil))
            case OpenSSHKeyFile.pemLabel:
                keys += try OpenSSHKeyFile.read(der, passphrase: asker.get).map { ImportedKey(key: $0.key, label: $0.comment.isEmpty ? nil : $0.comment) }
            default:
                if block.label == TSS2KeyFile.label {
                    throw KeychainError(.param, "a TSS2 PRIVATE KEY is a key held by a TPM: Secure Enclave keys are made in the TPM (key generate --token secure-enclave), never imported")
                }
                throw KeychainError(.param, "PEM block '\(block.label)' is not supported (certificates, private and public keys)")
            }
        }
    }

    /// One DER object, tried as each type in turn; each must take the whole input.
    private static func readDER(_ der: UnsafeRawBufferPointer, _ asker: PassphraseCache,
                                _ keys: inout [ImportedKey], _ certificates: inout [(Certificate, String?)]) throws {
        guard der.first == 0x30 else { throw KeychainError(.decode, "not DER (no SEQUENCE at the start)") }
        if let certificate = try? Certificate(der: Array(der)) {
            certificates.append((certificate, nil))
            return
        }
        ERR_clear_error()
        var failure: KeychainError?
        do {
            keys.append(ImportedKey(key: try AsymmetricKey(evp: EVPKey(pkcs8: der), isPrivate: true), label: nil))
            return
        } catch let error as KeychainError where error.code == .param { failure = error } catch {}
        do {
            keys.append(ImportedKey(key: try AsymmetricKey(evp: EVPKey(spki: der), isPrivate: false), label: nil))
            return
        } catch let error as KeychainError where error.code == .param { failure = error } catch {}
        if isEncryptedPKCS8(der) {
            keys.append(ImportedKey(key: try AsymmetricKey(evp: PKCS12File.decryptPKCS8(der, passphrase: try asker.get()), isPrivate: true), label: nil))
            return
        }
        for (type, name) in [(EVP_PKEY_RSA, "RSA"), (EVP_PKEY_EC, "EC")] {
            if let key = try? traditional(der, type, name) {
                keys.append(ImportedKey(key: key, label: nil))
                return
            }
        }
        if let key = try? AsymmetricKey(publicKeyExternalRepresentation: Array(der), keyType: .rsa) {
            keys.append(ImportedKey(key: key, label: nil))
            return
        }
        ERR_clear_error()
        if let failure { throw failure }
        throw KeychainError(.decode, "the DER is not a certificate, private key or public key")
    }

    private static func isEncryptedPKCS8(_ der: UnsafeRawBufferPointer) -> Bool {
        var p: UnsafePointer<UInt8>? = der.baseAddress!.assumingMemoryBound(to: UInt8.self)
        guard let sig = d2i_X509_SIG(nil, &p, der.count) else {
            ERR_clear_error()
            return false
        }
        X509_SIG_free(sig)
        return p == der.baseAddress!.assumingMemoryBound(to: UInt8.self) + der.count
    }

    /// A traditional (PKCS#1 RSA, SEC1 EC) private key.
    private static func traditional(_ der: UnsafeRawBufferPointer, _ type: Int32, _ name: String) throws -> AsymmetricKey {
        guard let base = der.baseAddress, der.count > 0 else { throw KeychainError(.decode, "empty \(name) private key") }
        var p: UnsafePointer<UInt8>? = base.assumingMemoryBound(to: UInt8.self)
        let key = EVPKey(taking: try OpenSSL.check(d2i_PrivateKey(type, nil, &p, der.count), .decode, "not a traditional \(name) private key"))
        guard p == base.assumingMemoryBound(to: UInt8.self) + der.count else { throw KeychainError(.decode, "trailing bytes after the \(name) private key") }
        return try AsymmetricKey(evp: key, isPrivate: true)
    }

    /// A traditional key with RFC 1421 encryption headers, which libcrypto's PEM reader decrypts.
    private static func encryptedTraditional(_ block: PEM.Block, _ bytes: UnsafeRawBufferPointer, _ asker: PassphraseCache) throws -> AsymmetricKey {
        let text = UnsafeRawBufferPointer(rebasing: bytes[block.whole])
        let pass = try PKCS12File.cString(try asker.get())
        guard let bio = BIO_new_mem_buf(text.baseAddress, Int32(text.count)) else { throw OpenSSL.failure(.io, "out of memory") }
        defer { BIO_free(bio) }
        // The passphrase goes in as the callback argument: with no callback,
        // libcrypto takes it as the password and never prompts on a terminal.
        let key = pass.withUnsafeBytes { PEM_read_bio_PrivateKey(bio, nil, nil, UnsafeMutableRawPointer(mutating: $0.baseAddress)) }
        guard let key else {
            let reason = OpenSSL.lastReason() ?? ""
            ERR_clear_error()
            if reason.contains(occurrenceOf: "unsupported") { throw KeychainError(.param, "the \(block.label.lowercased()) is encrypted with a cipher locket can't read") }
            throw KeychainError(.authFailed, "the passphrase is not correct for this encrypted \(block.label.lowercased())")
        }
        return try AsymmetricKey(evp: EVPKey(taking: key), isPrivate: true)
    }

    /// A `TRUSTED CERTIFICATE`: the certificate without OpenSSL's trust settings.
    private static func trustedCertificate(_ der: UnsafeRawBufferPointer) throws -> Certificate {
        var p: UnsafePointer<UInt8>? = der.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let x = try OpenSSL.check(d2i_X509_AUX(nil, &p, der.count), .decode, "not a trusted certificate")
        defer { X509_free(x) }
        return try Certificate(der: try OpenSSL.der("the trusted certificate", .decode) { i2d_X509(x, $0) })
    }
}
