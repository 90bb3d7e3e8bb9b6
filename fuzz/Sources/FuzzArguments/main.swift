import FuzzSupport
import LocketCLI

/// Arguments are NUL-separated strings.
runFuzzer { data, size in
    guard let data else { return 0 }
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    CLIFuzzEntryPoints.parseArguments(arguments)
    return 0
}
