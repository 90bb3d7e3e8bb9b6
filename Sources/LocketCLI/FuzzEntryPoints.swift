import LocketCore

/// Fuzzing only (`fuzz/`): the command line's parsers of untrusted input.
public enum CLIFuzzEntryPoints {
    /// The argument parser, without running the command.
    public static func parseArguments(_ arguments: [String]) {
        _ = try? Parser.parse(arguments)
    }

    /// The `exec --mask` filter over chunks: what it writes for the whole
    /// stream, and what it would have written had the stream ended after each
    /// of the first `endings` chunks (a copy of the filter ends there), so a
    /// fuzzer can check both.
    public static func mask(secrets: [[UInt8]], chunks: [[UInt8]], endings: Int = 0) throws -> (whole: [UInt8], endingAfterChunk: [[UInt8]]) {
        var masker = Masker(secrets: try secrets.map { try SecureBytes(copying: $0) })
        var out: [UInt8] = []
        var ended: [[UInt8]] = []
        for (k, chunk) in chunks.enumerated() {
            out += chunk.withUnsafeBytes { masker.feed($0) }
            if k < endings {
                var copy = masker
                ended.append(out + copy.finish())
            }
        }
        return (out + masker.finish(), ended)
    }
}
