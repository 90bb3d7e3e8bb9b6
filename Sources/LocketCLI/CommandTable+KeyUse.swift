import LocketCore

extension CommandTable {
    /// The options of `key sign|verify|encrypt|decrypt` (SPEC §13), after
    /// those of `key generate` and `key public` in the `key` entry.
    static let keyUseOptions: [OptionSpec] = [
        OptionSpec("algorithm", nil, .value("ALGORITHM"), completion: .values { KeyAlgorithm.allCases.map(\.rawValue) },
                   "sign, verify, encrypt, decrypt: the algorithm, e.g. ed25519, ecdsa-message-x962-sha256, rsa-signature-message-pss-sha256, rsa-encryption-oaep-sha256, ecies-cofactor-variable-iv-x963-sha256-aesgcm, x25519-sealed-box"),
        OptionSpec("in", "i", .value("FILE"), completion: .file, "read the data from FILE, a regular file (default: standard input)"),
        outFile, force,
        OptionSpec("signature", nil, .value("FILE"), completion: .file, "verify: the signature to check (a regular file)"),
    ]
}
