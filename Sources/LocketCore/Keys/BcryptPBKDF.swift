import CSodium
import LocketSupport

// bcrypt_pbkdf, the key derivation of passphrase-protected OpenSSH private
// keys ("openssh-key-v1" with kdfname "bcrypt"). No library that links
// statically here provides it (libcrypto has Blowfish's standard key schedule
// only, not the salted "expensive" one; libsodium has no Blowfish), so it is
// written from its published definitions: Blowfish (Schneier 1993), its
// expensive key schedule (Provos and Mazieres 1999, "A Future-Adaptable
// Password Scheme") and the PBKDF2-like construction of OpenBSD's
// bcrypt_pbkdf(3) (Unangst 2013). KeysBcryptTests checks it against keys that
// ssh-keygen encrypted.

/// Blowfish with the expensive key schedule, on a state in guarded memory
/// (it is derived from the passphrase).
struct Blowfish: ~Copyable {
    /// 18 words of P-array, then the four S-boxes of 256 words.
    private let storage: SecureBytes
    private let words: UnsafeMutablePointer<UInt32>

    init() throws {
        storage = try SecureBytes(count: 1042 * 4)
        words = storage.withUnsafeMutableBytes { $0.baseAddress!.bindMemory(to: UInt32.self, capacity: 1042) }
        Blowfish.piDigits.withUnsafeBufferPointer { words.update(from: $0.baseAddress!, count: 1042) }
    }

    @inline(__always)
    private func f(_ x: UInt32) -> UInt32 {
        let s = words + 18
        let a = s[Int(x >> 24)], b = s[256 + Int((x >> 16) & 0xff)]
        let c = s[512 + Int((x >> 8) & 0xff)], d = s[768 + Int(x & 0xff)]
        return ((a &+ b) ^ c) &+ d
    }

    /// Encrypts one 64-bit block held as two big-endian halves.
    @inline(__always)
    func encrypt(_ left: inout UInt32, _ right: inout UInt32) {
        var l = left, r = right
        var i = 0
        while i < 16 {
            l ^= words[i]
            r ^= f(l)
            r ^= words[i + 1]
            l ^= f(r)
            i += 2
        }
        left = r ^ words[17]
        right = l ^ words[16]
    }

    /// The next big-endian word of `bytes`, taken cyclically from `offset`.
    @inline(__always)
    private static func word(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int) -> UInt32 {
        var w: UInt32 = 0
        for _ in 0..<4 {
            if offset >= bytes.count { offset = 0 }
            w = (w << 8) | UInt32(bytes[offset])
            offset += 1
        }
        return w
    }

    /// The expensive key schedule's step: the key into the P-array, then the
    /// whole state re-encrypted with the salt mixed in (`salt` nil: no salt,
    /// the "expand0" variant).
    func expand(key: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer?) {
        var k = 0
        for i in 0..<18 { words[i] ^= Blowfish.word(key, &k) }
        var l: UInt32 = 0, r: UInt32 = 0, s = 0
        var i = 0
        while i < 1042 {
            if let salt {
                l ^= Blowfish.word(salt, &s)
                r ^= Blowfish.word(salt, &s)
            }
            encrypt(&l, &r)
            words[i] = l
            words[i + 1] = r
            i += 2
        }
    }
}

enum BcryptPBKDF {
    /// The largest output bcrypt_pbkdf defines (32 blocks of 32 bytes).
    static let maximumLength = 1024

    /// One bcrypt hash of two SHA-512 digests: 64 rounds of the expensive key
    /// schedule, then "OxychromaticBlowfishSwatDynamite" encrypted 64 times;
    /// the eight words come out little-endian.
    private static func hash(password: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) throws {
        let state = try Blowfish()
        state.expand(key: password, salt: salt)
        for _ in 0..<64 {
            state.expand(key: salt, salt: nil)
            state.expand(key: password, salt: nil)
        }
        let magic: [UInt8] = Array("OxychromaticBlowfishSwatDynamite".utf8)
        var block = [UInt32](repeating: 0, count: 8)
        for i in 0..<8 {
            block[i] = UInt32(magic[4 * i]) << 24 | UInt32(magic[4 * i + 1]) << 16 | UInt32(magic[4 * i + 2]) << 8 | UInt32(magic[4 * i + 3])
        }
        for _ in 0..<64 {
            for i in stride(from: 0, to: 8, by: 2) {
                var l = block[i], r = block[i + 1]
                state.encrypt(&l, &r)
                block[i] = l
                block[i + 1] = r
            }
        }
        for i in 0..<8 {
            for b in 0..<4 { out[4 * i + b] = UInt8(truncatingIfNeeded: block[i] >> (8 * b)) }
        }
        wipe(&block)
    }

    /// Derives `length` bytes from `password` and `salt` with `rounds`
    /// iterations, as OpenBSD's bcrypt_pbkdf(3).
    static func derive(password: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, rounds: Int, length: Int) throws -> SecureBytes {
        guard rounds >= 1, !password.isEmpty, !salt.isEmpty, length >= 1, length <= maximumLength, salt.count <= 1 << 20 else {
            throw KeychainError(.param, "bcrypt_pbkdf: invalid parameters")
        }
        let blocks = (length + 31) / 32
        let take = (length + blocks - 1) / blocks
        let key = try SecureBytes(count: length)
        // SHA-512 of the password, of salt || counter, of each round's output, and the two 32-byte accumulators.
        let scratch = try SecureBytes(count: 64 + 64 + 32 + 32)
        var countSalt = [UInt8](salt) + [0, 0, 0, 0]
        try scratch.withUnsafeMutableBytes { s in
            let sha2pass = UnsafeMutableRawBufferPointer(rebasing: s[0..<64])
            let sha2salt = UnsafeMutableRawBufferPointer(rebasing: s[64..<128])
            let output = UnsafeMutableRawBufferPointer(rebasing: s[128..<160])
            let round = UnsafeMutableRawBufferPointer(rebasing: s[160..<192])
            try Sodium.check(crypto_hash_sha512(sha2pass.baseAddress!, password.baseAddress!, UInt64(password.count)), "sha-512")
            try key.withUnsafeMutableBytes { key in
                for block in 1...blocks {
                    let n = salt.count
                    countSalt[n] = UInt8(block >> 24 & 0xff)
                    countSalt[n + 1] = UInt8(block >> 16 & 0xff)
                    countSalt[n + 2] = UInt8(block >> 8 & 0xff)
                    countSalt[n + 3] = UInt8(block & 0xff)
                    countSalt.withUnsafeBytes { _ = crypto_hash_sha512(sha2salt.baseAddress!, $0.baseAddress!, UInt64($0.count)) }
                    try hash(password: UnsafeRawBufferPointer(sha2pass), salt: UnsafeRawBufferPointer(sha2salt), into: round)
                    output.copyMemory(from: UnsafeRawBufferPointer(round))
                    if rounds > 1 {
                        for _ in 1..<rounds {
                            _ = crypto_hash_sha512(sha2salt.baseAddress!, round.baseAddress!, 32)
                            try hash(password: UnsafeRawBufferPointer(sha2pass), salt: UnsafeRawBufferPointer(sha2salt), into: round)
                            for j in 0..<32 { output[j] ^= round[j] }
                        }
                    }
                    // Not PBKDF2's concatenation: byte i of block b goes to i * blocks + b - 1,
                    // so that every part of the key needs every block computed.
                    for i in 0..<take {
                        let destination = i * blocks + block - 1
                        if destination >= length { break }
                        key[destination] = output[i]
                    }
                }
            }
        }
        return key
    }
}
