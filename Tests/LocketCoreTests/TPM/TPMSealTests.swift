import Foundation
import LocketCore
import XCTest

/// A secret sealed by the TPM (`init --tpm`'s device secret, SPEC §21): it
/// comes back on this TPM only, and with PCRs only while they are unchanged.
final class TPMSealTests: TPMTestCase {
    let secret = Array("a device secret of thirty-two by".utf8)

    func testASealedSecretOpensOnItsTPMAndNoOther() throws {
        let first = try client(try sharedTPM())
        let sealed = try first.seal(try SecureBytes(copying: secret))
        XCTAssertEqual(sealed.kind, .sealed)
        XCTAssertTrue(sealed.policy.isEmpty)
        // It goes through its PEM, as a keychain keeps it.
        let kept = try TSS2KeyFile(pem: Array(sealed.pem.utf8))
        XCTAssertEqual(try first.unseal(kept).withUnsafeBytes { Array($0) }, secret)
        let other = try client(try sharedTPM(1))
        let refused = assertKeychainError(.decode) { try other.unseal(kept) }
        XCTAssertEqual(refused?.reason, .boundToOtherDevice)
        XCTAssertTrue(refused?.message.contains("another TPM") == true, "\(refused!)")
        // The other TPM works on: nothing was broken by the refusal.
        XCTAssertEqual(try other.unseal(try other.seal(try SecureBytes(copying: secret))).withUnsafeBytes { Array($0) }, secret)
    }

    func testAnAuthorizationValueAndPCRsBindItFurther() throws {
        let tpm = try sharedTPM()
        let client = try client(tpm)
        let pcrs = try PCRSelection([16])
        let sealed = try client.seal(try SecureBytes(copying: secret), authorization: try password("sesame"), pcrs: pcrs)
        XCTAssertEqual(sealed.policy.map(\.commandCode), [0x17f, 0x16b])
        XCTAssertFalse(sealed.emptyAuth)
        XCTAssertEqual(try client.unseal(sealed, authorization: try password("sesame")).withUnsafeBytes { Array($0) }, secret)
        assertKeychainError(.authFailed) { try client.unseal(sealed, authorization: try password("wrong")) }
        assertKeychainError(.interactionNotAllowed) { try client.unseal(sealed) }
        // PCR 16 (the debug PCR) extended: the policy no longer holds.
        client.close()
        try tpm2Tool("tpm2_pcrextend", ["16:sha256=" + String(repeating: "ab", count: 32)], on: tpm)
        let changed = assertKeychainError(.authFailed) { try client.unseal(sealed, authorization: try password("sesame")) }
        XCTAssertTrue(changed?.message.contains("PCR values differ") == true, "\(changed!)")
        assertKeychainError(.param) { try client.seal(try SecureBytes(copying: [UInt8](repeating: 1, count: 129))) }
        assertKeychainError(.param) { try PCRSelection([24]) }
    }

    func testAPolicyLocketCanNotSatisfyIsRefusedBeforeTheTPM() throws {
        let client = try client(try sharedTPM())
        let sealed = try client.seal(try SecureBytes(copying: secret), pcrs: try PCRSelection([7, 16]))
        for policy: [TSS2KeyFile.PolicyStep] in [
            [.init(commandCode: 0x16a /* PolicySigned */, commandPolicy: [])],
            [sealed.policy[0], sealed.policy[0]],
            [.init(commandCode: 0x17f, commandPolicy: [0, 0, 0, 0, 0, 1, 0, 0x04 /* SHA-1 */, 3, 0, 0, 1])],
            [.init(commandCode: 0x17f, commandPolicy: [0, 40])],
        ] {
            let forged = TSS2KeyFile(kind: .sealed, emptyAuth: true, policy: policy, publicArea: sealed.publicArea, privateArea: sealed.privateArea)
            assertKeychainError(.decode) { try client.unseal(forged) }
        }
        // The policy as written selects PCRs 7 and 16.
        XCTAssertEqual(Array(sealed.policy[0].commandPolicy.suffix(3)), [0x80, 0x00, 0x01])
    }
}
