import FuzzSupport
import LocketCore

/// The first byte picks the decoder; the rest is its input.
runFuzzer { data, size in
    guard let data else { return 0 }
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 5 {
    case 0: FuzzEntryPoints.decodeItemRecord(bytes)
    case 1: FuzzEntryPoints.decodeDataRecord(bytes)
    case 2: FuzzEntryPoints.decodeSessionRecord(bytes)
    case 3: FuzzEntryPoints.decodeKDFParameters(bytes)
    default: FuzzEntryPoints.openSealed(bytes)
    }
    return 0
}
