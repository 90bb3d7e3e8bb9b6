// How much work a file asks of the passphrase's key derivation, checked
// before libcrypto derives anything. The iteration counts and scrypt costs of
// PKCS#12, PKCS#8 and OpenSSH keys are chosen by whoever made the file, and
// libcrypto honours any of them: a file asking for 2^31 PBKDF2 iterations
// would keep `import` busy for hours. The limits sit far above what any tool
// writes (OpenSSL 2048, Java 10000, OWASP's 600000 for PBKDF2; ssh-keygen 16
// bcrypt rounds, `-a 100` for the careful).

enum PasswordWork {
    /// PBKDF2 and PKCS#12 KDF iterations (about 2 s here at the limit).
    static let maximumIterations = 2_000_000
    /// scrypt's N * r * p (OpenSSL writes 2^14 * 8 * 1 = 2^17).
    static let maximumScryptWork = 1 << 22
    /// bcrypt_pbkdf rounds of an OpenSSH key (about 6 s here at the limit).
    static let maximumBcryptRounds = 1024

    private static let pkcs5: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x05]
    private static let pbes2 = pkcs5 + [0x0D]
    private static let pbkdf2 = pkcs5 + [0x0C]
    private static let scrypt: [UInt8] = [0x2B, 0x06, 0x01, 0x04, 0x01, 0xDA, 0x47, 0x04, 0x0B]
    /// PKCS#12's own PBE algorithms, 1.2.840.113549.1.12.1.1-6: SEQUENCE { salt, iterations }.
    private static let pkcs12PBE: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x0C, 0x01]
    /// PBES1, 1.2.840.113549.1.5.{1,3,4,6,10,11}: SEQUENCE { salt, iterations }.
    private static let pbes1Arcs: Set<UInt8> = [1, 3, 4, 6, 10, 11]

    /// Refuses an AlgorithmIdentifier (DER) of a password-based scheme that
    /// asks for more work than the limits; other algorithms pass (libcrypto
    /// judges them). `what` names the file in the message.
    static func check(algorithmIdentifier der: [UInt8], what: String) throws {
        let top = try DER.element(der, at: 0)
        guard top.tag == DER.sequence, top.whole.upperBound == der.count else { throw malformed(what) }
        let parts = try DER.children(der, top.contents)
        guard let oid = parts.first, oid.tag == 0x06 else { throw malformed(what) }
        let identifier = Array(der[oid.contents])
        let parameters = parts.count > 1 ? parts[1] : nil
        if identifier == pbes2 {
            // SEQUENCE { keyDerivationFunc AlgorithmIdentifier, encryptionScheme AlgorithmIdentifier }
            guard let parameters, parameters.tag == DER.sequence,
                  let kdf = try DER.children(der, parameters.contents).first, kdf.tag == DER.sequence,
                  let kdfOID = try DER.children(der, kdf.contents).first, kdfOID.tag == 0x06,
                  [pbkdf2, scrypt].contains(Array(der[kdfOID.contents])) else { throw malformed(what) }
            try check(algorithmIdentifier: Array(der[kdf.whole]), what: what)
        } else if identifier == pbkdf2 {
            // SEQUENCE { salt, iterationCount, keyLength OPTIONAL, prf OPTIONAL }
            try checkIterations(der, parameters, what: what)
        } else if identifier == scrypt {
            // SEQUENCE { salt, costParameter N, blockSize r, parallelizationParameter p, keyLength OPTIONAL }
            guard let parameters, parameters.tag == DER.sequence else { throw malformed(what) }
            let fields = try DER.children(der, parameters.contents)
            guard fields.count >= 4 else { throw malformed(what) }
            var work = 1
            for field in fields[1...3] {
                guard let value = integer(der, field), value > 0 else { throw malformed(what) }
                work = work.multipliedReportingOverflow(by: value).overflow ? Int.max : work * value
            }
            guard work <= maximumScryptWork else {
                throw KeychainError(.decode, "the \(what) asks for scrypt work N*r*p = \(work); locket reads at most \(maximumScryptWork) (a file made to be slow to open?)")
            }
        } else if identifier.count == pkcs12PBE.count + 1, identifier.starts(with: pkcs12PBE) {
            try checkIterations(der, parameters, what: what)
        } else if identifier.count == pkcs5.count + 1, identifier.starts(with: pkcs5), pbes1Arcs.contains(identifier.last!) {
            try checkIterations(der, parameters, what: what)
        }
    }

    /// A PKCS#12 MAC's iteration count (absent means 1).
    static func check(macIterations: Int, what: String) throws {
        guard macIterations <= maximumIterations else { throw tooMany(macIterations, what) }
    }

    /// An OpenSSH key's bcrypt_pbkdf rounds.
    static func check(bcryptRounds: UInt32) throws {
        guard bcryptRounds <= maximumBcryptRounds else {
            throw KeychainError(.decode, "the OpenSSH key asks for \(bcryptRounds) bcrypt rounds; locket reads at most \(maximumBcryptRounds) (re-encrypt it with ssh-keygen -p -a 100 -f FILE)")
        }
    }

    /// `SEQUENCE { salt, iterations, ... }`: the second field.
    private static func checkIterations(_ der: [UInt8], _ parameters: DER.Element?, what: String) throws {
        guard let parameters, parameters.tag == DER.sequence else { throw malformed(what) }
        let fields = try DER.children(der, parameters.contents)
        guard fields.count >= 2, let iterations = integer(der, fields[1]), iterations > 0 else { throw malformed(what) }
        guard iterations <= maximumIterations else { throw tooMany(iterations, what) }
    }

    /// A non-negative INTEGER; Int.max when it does not fit, nil when it is no INTEGER or negative.
    private static func integer(_ der: [UInt8], _ element: DER.Element) -> Int? {
        guard element.tag == 0x02, !element.contents.isEmpty, der[element.contents.lowerBound] & 0x80 == 0 else { return nil }
        let digits = der[element.contents].drop { $0 == 0 }
        guard digits.count <= 7 else { return Int.max }
        return digits.reduce(0) { $0 << 8 | Int($1) }
    }

    static func tooMany(_ iterations: Int, _ what: String) -> KeychainError {
        KeychainError(.decode, "the \(what) asks for \(iterations) key-derivation iterations; locket reads at most \(maximumIterations) (a file made to be slow to open?)")
    }

    private static func malformed(_ what: String) -> KeychainError {
        KeychainError(.decode, "the \(what) has malformed password-based encryption parameters")
    }
}
