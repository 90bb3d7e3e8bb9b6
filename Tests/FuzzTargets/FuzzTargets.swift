import LocketCLI
import LocketCore

/// What each libFuzzer target of `fuzz/` does with one input, as plain
/// functions: `fuzz/run` (ASan, coverage, mutations) calls them from
/// libFuzzer, and `make test` replays every seed of `fuzz/corpus/` through
/// them in-process (FuzzCorpusTests) without a sanitizer build of its own.
/// Each checks its properties with `precondition`.
public enum FuzzTargets {
    /// The targets by name (the directories of `fuzz/corpus/` and `fuzz/Sources/`).
    public static let all: [String: @Sendable ([UInt8]) -> Void] = [
        "FuzzAgent": agent, "FuzzArguments": arguments, "FuzzCredential": credential,
        "FuzzEntitlements": entitlements, "FuzzImports": imports, "FuzzKeyFiles": keyFiles,
        "FuzzMask": mask, "FuzzRecords": records, "FuzzReference": reference,
    ]

    /// Arguments are NUL-separated strings.
    public static func arguments(_ bytes: [UInt8]) {
        let arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        CLIFuzzEntryPoints.parseArguments(arguments)
    }

    /// A git credential request: every field it keeps is one clean line.
    public static func credential(_ bytes: [UInt8]) {
        let request = GitCredential(parsing: bytes)
        for (key, value) in request.fields {
            precondition(!key.isEmpty && !key.contains("\n") && !value.contains("\n") && !value.contains("\0"))
        }
    }

    /// XML property lists, binary ones and JSON alike: parse must fail with a
    /// KeychainError, never crash, and every group it returns must be usable.
    public static func entitlements(_ bytes: [UInt8]) {
        if let entitlements = try? Entitlements.parse(bytes, name: "fuzz.entitlements") {
            precondition(!entitlements.accessGroups.isEmpty)
            precondition(entitlements.accessGroups.allSatisfy { !$0.isEmpty && !$0.unicodeScalars.contains { $0.value < 0x20 } })
            precondition(Set(entitlements.accessGroups).count == entitlements.accessGroups.count)
        }
    }

    /// The first byte picks the reader; the rest is its input.
    public static func imports(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let rest = Array(bytes.dropFirst())
        switch first % 5 {
        case 0: FuzzEntryPoints.decodeBackup(rest)
        case 1: FuzzEntryPoints.readMigration(.bitwardenJSON, rest)
        case 2: FuzzEntryPoints.readMigration(.onePasswordCSV, rest)
        case 3: FuzzEntryPoints.readMigration(.keepassxcCSV, rest)
        default: FuzzEntryPoints.readMigration(.securityDump, rest)
        }
    }

    /// Key files as `import` will read them (PKCS#12, PEM, DER, OpenSSH), the
    /// format detected from the bytes; every passphrase asked for is "pw", the
    /// one the seeds were made with, so that mutations reach the decrypted parts.
    public static func keyFiles(_ bytes: [UInt8]) {
        _ = try? KeyImport.parse(bytes) { try SecureBytes(copying: Array("pw".utf8)) }
    }

    /// The first byte picks the decoder; the rest is its input.
    public static func records(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let rest = Array(bytes.dropFirst())
        switch first % 5 {
        case 0: FuzzEntryPoints.decodeItemRecord(rest)
        case 1: FuzzEntryPoints.decodeDataRecord(rest)
        case 2: FuzzEntryPoints.decodeSessionRecord(rest)
        case 3: FuzzEntryPoints.decodeKDFParameters(rest)
        default: FuzzEntryPoints.openSealed(rest)
        }
    }

    public static func reference(_ bytes: [UInt8]) {
        _ = try? Reference.query(String(decoding: bytes, as: UTF8.self))
    }
}
