import FuzzSupport
import LocketCLI

/// Input: one secret (first byte = its length, 1-16), then the stream, cut
/// into chunks at every 0xff byte. Property: however the stream is chunked,
/// the output equals masking the whole stream at once: every byte of every
/// occurrence hidden, each run of hidden bytes one `<redacted>`.
func reference(_ stream: [UInt8], _ secret: [UInt8]) -> [UInt8] {
    var covered = [Bool](repeating: false, count: stream.count)
    if secret.count <= stream.count {
        for i in 0...(stream.count - secret.count) where stream[i..<(i + secret.count)].elementsEqual(secret) {
            for k in i..<(i + secret.count) { covered[k] = true }
        }
    }
    var out: [UInt8] = []
    var i = 0
    while i < stream.count {
        if covered[i] {
            out += Array("<redacted>".utf8)
            while i < stream.count && covered[i] { i += 1 }
        } else {
            out.append(stream[i])
            i += 1
        }
    }
    return out
}

runFuzzer { data, size in
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = bytes.first else { return 0 }
    let length = Int(first % 16) + 1
    guard bytes.count > length else { return 0 }
    let secret = Array(bytes[1...length])
    guard !secret.contains(0xff) else { return 0 }
    let chunks = bytes[(length + 1)...].split(separator: 0xff, omittingEmptySubsequences: false).map(Array.init)
    let stream = chunks.flatMap { $0 }
    let out = CLIFuzzEntryPoints.mask(secrets: [secret], chunks: chunks)
    precondition(out == reference(stream, secret), "chunked masking differs from masking the whole stream")
    return 0
}
