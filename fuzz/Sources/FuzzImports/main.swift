import FuzzSupport
import LocketCore

/// The first byte picks the reader; the rest is its input.
runFuzzer { data, size in
    guard let data else { return 0 }
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 5 {
    case 0: FuzzEntryPoints.decodeBackup(bytes)
    case 1: FuzzEntryPoints.readMigration(.bitwardenJSON, bytes)
    case 2: FuzzEntryPoints.readMigration(.onePasswordCSV, bytes)
    case 3: FuzzEntryPoints.readMigration(.keepassxcCSV, bytes)
    default: FuzzEntryPoints.readMigration(.securityDump, bytes)
    }
    return 0
}
