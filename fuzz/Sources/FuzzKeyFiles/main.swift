import FuzzSupport
import LocketCore

/// Key files as `import` will read them (PKCS#12, PEM, DER, OpenSSH), the
/// format detected from the bytes; every passphrase asked for is "pw", the
/// one the seeds were made with, so that mutations reach the decrypted parts.
runFuzzer { data, size in
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? KeyImport.parse(bytes) { SecureBytes(copying: Array("pw".utf8)) }
    return 0
}
