import LocketCore

/// The Argon2id costs `init --kdf` and `passwd --kdf` offer: libsodium's
/// named limits, never less than INTERACTIVE.
enum KDFLevel: String, CaseIterable {
    case interactive, moderate, sensitive

    var cost: KDFCost {
        switch self {
        case .interactive: .interactive
        case .moderate: .moderate
        case .sensitive: .sensitive
        }
    }

    /// The level named by `--kdf`, or a usage error naming the choices.
    static func parse(_ text: String, command: String) throws -> KDFLevel {
        guard let level = KDFLevel(rawValue: text) else {
            throw UsageError(message: "--kdf must be one of " + allCases.map(\.rawValue).joined(with: ", "), command: command)
        }
        return level
    }
}
