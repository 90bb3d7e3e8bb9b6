import LocketCore

// Options several commands share that keys and certificates brought
// (issue 13): the item class, a key's tag, a certificate's hash, and what
// `import` and `key generate` apply to the keys they add.
extension CommandTable {
    static let itemClass = OptionSpec("class", nil, .value("CLASS"), completion: .values { ["genp", "inet", "keys", "cert", "identity"] },
                                      "item class: genp (generic password, the default), inet (internet password), keys, cert or identity")
    static let tag = OptionSpec("tag", nil, .value("TAG"), "application tag of a key (keys, identity): the name keys are found by")
    static let hash = OptionSpec("hash", nil, .value("SHA256"), "SHA-256 fingerprint of a certificate (cert, identity), hexadecimal")
    static let keyLabel = OptionSpec("label", "l", .value("LABEL"), "label (default: the file's name for the key, else the certificate's common name)")
    static let keyAccessGroup = OptionSpec("access-group", nil, .value("GROUP"), "access group")
    static let accessible = OptionSpec("accessible", nil, .value("CLASS"), completion: .values { ProtectionClass.allCases.map(\.name) },
                                       "protection class: " + ProtectionClass.allCases.map { $0.name }.joined(with: ", ") + " (default when-unlocked)")
    static let nonExtractable = OptionSpec("non-extractable", nil, .flag, "private keys can be used but never leave the keychain (export, find -w refuse)")
}
