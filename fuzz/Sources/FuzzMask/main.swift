import FuzzSupport
import LocketCLI

/// Input: one secret (first byte = its length, 1-16), then the stream, cut
/// into chunks at every 0xff byte. A second secret, the secret's second half,
/// exercises nested and overlapping secrets. Properties: however the stream
/// is chunked, the output equals masking the whole stream at once (every
/// byte of every occurrence hidden, each run of hidden bytes one
/// `<redacted>`); and ending the stream after a chunk gives the masking of
/// what came so far: nothing a later chunk could still turn into a secret
/// was let out earlier, and nothing is lost when the stream ends.
func reference(_ stream: [UInt8], _ secrets: [[UInt8]]) -> [UInt8] {
    var covered = [Bool](repeating: false, count: stream.count)
    for secret in secrets where secret.count <= stream.count {
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
    let secrets = secret.count >= 2 ? [secret, Array(secret[(secret.count / 2)...])] : [secret]
    let chunks = bytes[(length + 1)...].split(separator: 0xff, omittingEmptySubsequences: false).map(Array.init)
    let stream = chunks.flatMap { $0 }
    // Endings after the first 4 chunks only: checking every one costs the
    // square of the input's length, and the fuzzer's speed with it.
    let out = CLIFuzzEntryPoints.mask(secrets: secrets, chunks: chunks, endings: 4)
    precondition(out.whole == reference(stream, secrets), "chunked masking differs from masking the whole stream")
    var sofar: [UInt8] = []
    for (chunk, ending) in zip(chunks, out.endingAfterChunk) {
        sofar += chunk
        precondition(ending == reference(sofar, secrets), "ending the stream after a chunk masks it differently")
    }
    return 0
}
