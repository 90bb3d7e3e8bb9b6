import CCrypto
@testable import LocketCore
import XCTest

/// The pair check of RSA keys assembled from their components (OpenSSH
/// files): each inconsistent key is refused with errSecDecode and the
/// message libcrypto's own check (EVP_PKEY_pairwise_check, the one locket
/// used before) gives it. 512-bit keys: milliseconds.
final class RSAPairCheckTests: XCTestCase {
    /// An RSA key's components in hexadecimal.
    struct Components {
        var n, e, d, p, q, dP, dQ, qInv: String
    }

    static let a = Components(
        n: "c8095cd200e446349ae1e943fffc18b0da343de724d697f4f032a1da170429d3764d7f306f279f9aace0137fda386b2ce50bb11bbfa9773441656676e1b18195",
        e: "10001",
        d: "a50df4a4e34f780e57ee28478fa537ca5581ddc227c759c3259ee1a5ce7005019b8b8315a98e5d3851660a41756df8c46cab164f8793e14f109dc8e80184ea9",
        p: "fb68fbec5cca8f854c3bd99b68ef67ee946036d8448b35ad7709566c8e921089",
        q: "cbb04622494c324510d054984d14e891daf6cac98f5d287f6a45d30007e26dad",
        dP: "c0866ddd5c55b64082d79655bfaf0e2d12acf772f8528ec18ed5b4bc1f15d5d9",
        dQ: "4d56dd0a5fb262d3fe925bcc88580c067591876608dd62671ebeec62f29b72f1",
        qInv: "cb4f1087c78cecd3f0c657ed788a31f4b3852884e4568a7f77b482e87375ffdd")

    static let b = Components(
        n: "c685468d91b26c1681ee95748bd914b7d95d1a6288011475a022318533832f0bf1ac04e3ef7649c0f12264ec4f207c43cb62c40dc87d971735f7ef93d97443f3",
        e: "10001",
        d: "4ed5b73e59f9024e6fdbb89337440623ba586c356bb00e1965f59e37b8cca41e04b6b60bc34b352724ad73afc6a236c3bae1115b3452278b8868187e9b4c5d11",
        p: "f8db887db92e251bd4ae16845852038d654db8cdf7ae30cdbdc5b2faf4bfcfb1",
        q: "cc37e502c1b6eea76292ab0136b5a16454d4b9c2cfc4d4e08271d223c0a13ae3",
        dP: "b8e0df96076cf0c4ac4c690e094f64b436fe76bd0db4ab2d2e3f21a8af0b911",
        dQ: "b353bdd10ee4216b70ded4352ba29107768a9a589c73fe6eeb7d21876da6e6fb",
        qInv: "c4c67c79aa7920fecebb3ef01f3b048acb5b5c8fffe1de90020fa1400b0233c1")

    /// p is the product of two 128-bit primes; every equality between the
    /// components holds (d, dP, dQ computed from lcm(p-1, q-1)).
    static let compositeP = Components(
        n: "93788ab0beeaa9e22672263a7a90495e223535851a492ae697f65bf7d8b3a527be9ec84657efb4a635153441408800e4ac9750f73aaf6c46a309f214e853f977",
        e: "10001",
        d: "dd9df10edc5a5b22f913e24f4f913630b8c7adbe715a339686183ceda2439694729e2cf72dd2f886dbabeb0e0fd89fc37e26b4dad354366e2528e0c2f8cee75",
        p: "b5b9b880496a0f5bd1320445a99aaa7aa16f6cdfbd340dfe75d514fb306a49cd",
        q: "cfbeb26f36467f50b365e787a73668fe6575d2146ed3086fbd3085e644da3c53",
        dP: "2ca28647b44081af3aadbf50e0fca53ce3a3fba8e4cf0154ebda3f8206fd444d",
        dQ: "acbc96a78c4caffe0d3d3578011c67cee7d440db068f689b6887193f2f8efacb",
        qInv: "5e80f8a0e22e3e2947e359b48ae8276e49e4f12d958881aed93a3c959ef07829")

    /// The key libcrypto assembles from `c`, as OpenSSHKeyFile does.
    static func key(_ c: Components) throws -> EVPKey {
        try KeyParameters.build { bld, keep in
            let fields: [(StaticString, String)] = [("n", c.n), ("e", c.e), ("d", c.d), ("rsa-factor1", c.p), ("rsa-factor2", c.q),
                                                    ("rsa-exponent1", c.dP), ("rsa-exponent2", c.dQ), ("rsa-coefficient1", c.qInv)]
            for (name, hex) in fields {
                var bn: OpaquePointer?
                XCTAssertGreaterThan(BN_hex2bn(&bn, hex), 0)
                keep.append(bn!)
                try KeyParameters.push(OSSL_PARAM_BLD_push_BN(bld, OpenSSL.cString(name), bn))
            }
        } make: { try EVPKey(name: "RSA", selection: locket_evp_pkey_keypair(), params: $0) }
    }

    /// libcrypto's EVP_PKEY_pairwise_check of the key (locket's check
    /// before): nil when it accepts the key, else the refusal's message.
    static func libcryptoRefusal(_ key: EVPKey) -> String? {
        let ctx = EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil)
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_pairwise_check(ctx) != 1 else { return nil }
        return OpenSSL.failure(.decode, "the private key does not match its public key").message
    }

    func testConsistentKeysPass() throws {
        for c in [Self.a, Self.b] {
            let key = try Self.key(c)
            XCTAssertNoThrow(try key.checkPair())
            XCTAssertNil(Self.libcryptoRefusal(key))
        }
    }

    func testEveryInconsistentKeyIsRefusedAsByLibcrypto() throws {
        let (a, b) = (Self.a, Self.b)
        var cases: [(String, Components)] = []
        func tampered(_ what: String, _ change: (inout Components) -> Void) {
            var c = a
            change(&c)
            cases.append((what, c))
        }
        tampered("d of another key") { $0.d = b.d }
        // As OpenSSHKeyFile makes them: dP and dQ from the foreign d.
        tampered("d of another key, dP and dQ from it") {
            $0.d = b.d
            $0.dP = "5b2e1cb15de4fb1670646c2e6aaf4721ae147104c45214531804c0eb34e22ba1"
            $0.dQ = "51b0bbcee1bbe85b6de23d19c8641175d7366fcec70c5710c84f59870485e29d"
        }
        tampered("dP of another key") { $0.dP = b.dP }
        tampered("dQ of another key") { $0.dQ = b.dQ }
        tampered("qInv of another key") { $0.qInv = b.qInv }
        tampered("qInv plus p (the right residue, not reduced)") { $0.qInv = "1c6b80c7424577c593d023188e17999e347e55f5d28e1c02ceebdd95502081066" }
        tampered("p and q of another key") { ($0.p, $0.q) = (b.p, b.q) }
        tampered("the private half of another key (n not p*q)") { c in c = b; c.n = a.n }
        tampered("p and q swapped") { ($0.p, $0.q, $0.dP, $0.dQ) = (a.q, a.p, a.dQ, a.dP) }
        tampered("e of another value") { $0.e = "3" }
        tampered("e = 1 (with d, dP and dQ 1)") { ($0.e, $0.d, $0.dP, $0.dQ) = ("1", "1", "1", "1") }
        tampered("p = 1, q = n") { ($0.p, $0.q) = ("1", a.n) }
        tampered("a flipped bit in n") { $0.n = "c8095cd200e446349ae1e943fffc18b0da343de724d697f4f032a1da170429d3764d7f306f279f9aace0137fda386b2ce50bb11bbfa9773441656676e1b18194" }
        cases.append(("p composite (every equality holds)", Self.compositeP))
        for (what, c) in cases {
            let key = try Self.key(c)
            let before = Self.libcryptoRefusal(key)
            XCTAssertNotNil(before, "libcrypto accepts \(what)")
            let error = assertKeychainError(.decode) { try key.checkPair() }
            XCTAssertTrue(error?.message.hasPrefix("the private key does not match its public key: ") ?? false, what)
            // libcrypto's reason, but for p = 1, where its arithmetic fails first.
            if what != "p = 1, q = n" { XCTAssertEqual(error?.message, before, what) }
        }
        XCTAssertEqual(cases.count, 14)
    }
}
