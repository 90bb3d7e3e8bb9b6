import LocketCore

/// Fuzzing only (`fuzz/`): the command line's parsers of untrusted input.
public enum CLIFuzzEntryPoints {
    /// The argument parser, without running the command.
    public static func parseArguments(_ arguments: [String]) {
        _ = try? Parser.parse(arguments)
    }

    /// The `exec --mask` filter over chunks, checking that no secret survives.
    public static func mask(secrets: [[UInt8]], chunks: [[UInt8]]) -> [UInt8] {
        var masker = Masker(secrets: secrets.map { SecureBytes(copying: $0) })
        var out: [UInt8] = []
        for chunk in chunks { out += chunk.withUnsafeBytes { masker.feed($0) } }
        return out + masker.flush()
    }
}
