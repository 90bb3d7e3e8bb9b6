import LocketCore
import XCTest

/// The agent engine on messages built by hand: what each request gets back,
/// signatures checked by the key's own verifier here and by ssh-keygen in
/// the end-to-end tests, and a failure (never a crash) for everything else.
final class AgentEngineTests: XCTestCase {
    private func respond(_ source: any AgentKeySource, _ message: [UInt8]) -> (reply: [UInt8], event: AgentEvent?) {
        message.withUnsafeBytes { AgentEngine(source: source).respond(to: $0) }
    }

    private let failure: [UInt8] = [0, 0, 0, 1, 5]

    func testIdentitiesAnswerListsEveryKeyWithItsComment() throws {
        let source = MemoryKeySource()
        let (reply, event) = respond(source, Wire.message(11))
        XCTAssertNil(event)
        let (type, contents) = try Wire.unframe(reply)
        XCTAssertEqual(type, 12)
        var r = Wire.Reader(contents)
        XCTAssertEqual(try r.uint32(), UInt32(AgentTestKeys.all.count))
        for (name, key) in AgentTestKeys.all {
            XCTAssertEqual(try r.string(), try key.sshPublicKeyBlob())
            XCTAssertEqual(try r.string(), Array(name.utf8))
        }
        XCTAssertTrue(r.atEnd)
    }

    func testAnEmptySourceAnswersNoIdentities() throws {
        let (reply, event) = respond(MemoryKeySource([]), Wire.message(11))
        XCTAssertNil(event)
        XCTAssertEqual(reply, [0, 0, 0, 5, 12, 0, 0, 0, 0])
    }

    /// Each key type signs with the algorithm SSH names for it; RSA as the flags ask.
    func testSignaturesOfEveryKeyType() throws {
        let data = Array("session hash".utf8)
        let cases: [(key: String, flags: UInt32, algorithm: String)] = [
            ("ed25519", 0, "ssh-ed25519"), ("p256", 0, "ecdsa-sha2-nistp256"), ("p384", 0, "ecdsa-sha2-nistp384"),
            ("p521", 0, "ecdsa-sha2-nistp521"), ("rsa2048", 2, "rsa-sha2-256"), ("rsa2048", 4, "rsa-sha2-512"),
            // RSA flags mean nothing to other keys, as in OpenSSH.
            ("ed25519", 4, "ssh-ed25519"), ("p256", 2, "ecdsa-sha2-nistp256"),
        ]
        for (name, flags, algorithm) in cases {
            let key = AgentTestKeys.named(name)
            let (reply, event) = respond(MemoryKeySource(), try Wire.signRequest(key, data: data, flags: flags))
            XCTAssertNil(event, name)
            let (type, contents) = try Wire.unframe(reply)
            XCTAssertEqual(type, 14, name)
            var r = Wire.Reader(contents)
            let signature = try r.string()
            XCTAssertTrue(r.atEnd, name)
            var s = Wire.Reader(signature)
            XCTAssertEqual(String(decoding: try s.string(), as: UTF8.self), algorithm, name)
            let blob = try s.string()
            XCTAssertTrue(s.atEnd, name)
            XCTAssertTrue(try key.verifySSHSignature(signature, for: data), "\(name) flags \(flags)")
            XCTAssertFalse(try key.verifySSHSignature(signature, for: data + [0]), "\(name) verifies other data")
            if name.hasPrefix("p") {
                // ECDSA: (r, s) as two mpints, each a positive integer no longer than the curve's order.
                var m = Wire.Reader(blob)
                for _ in 0..<2 {
                    let n = try m.string()
                    XCTAssertFalse(n.isEmpty)
                    XCTAssertEqual(n[0] & 0x80, 0, "an mpint with its top bit set is negative")
                    if n.count > 1 { XCTAssertFalse(n[0] == 0 && n[1] & 0x80 == 0, "a needless leading zero") }
                    XCTAssertLessThanOrEqual(n.count, (key.sizeInBits + 7) / 8 + 1)
                }
                XCTAssertTrue(m.atEnd)
            }
        }
    }

    /// SHA-1 `ssh-rsa` is refused: OpenSSH stopped accepting it by default in 8.8.
    func testRSAWithoutSHA2FlagsIsRefused() throws {
        let (reply, event) = respond(MemoryKeySource(), try Wire.signRequest(AgentTestKeys.named("rsa2048"), data: [1, 2, 3], flags: 0))
        XCTAssertEqual(reply, failure)
        guard case .signRefused(let error) = event else { return XCTFail("\(String(describing: event))") }
        XCTAssertEqual(error.code, .param)
        XCTAssertTrue(error.message.contains("rsa-sha2-256"), error.message)
    }

    /// The source is asked for every request: locked, the same request fails
    /// with errSecInteractionNotAllowed; unlocked again, it succeeds.
    func testEachSignatureAsksTheSourceAgain() throws {
        let source = MemoryKeySource()
        let request = try Wire.signRequest(AgentTestKeys.named("ed25519"), data: [9, 9])
        XCTAssertEqual(try Wire.unframe(respond(source, request).reply).type, 14)
        source.locked = true
        let (reply, event) = respond(source, request)
        XCTAssertEqual(reply, failure)
        XCTAssertEqual(event, .signRefused(KeychainError(.interactionNotAllowed)))
        source.locked = false
        XCTAssertEqual(try Wire.unframe(respond(source, request).reply).type, 14)
        XCTAssertEqual(source.signings, 3)
    }

    func testIdentitiesAreAskedForEveryRequestToo() {
        let source = MemoryKeySource()
        source.hidden = true
        let (reply, event) = respond(source, Wire.message(11))
        XCTAssertEqual(reply, failure)
        XCTAssertEqual(event, .identitiesRefused(KeychainError(.interactionNotAllowed)))
        source.hidden = false
        XCTAssertEqual(respond(source, Wire.message(11)).reply[4], 12)
        XCTAssertEqual(source.listings, 2)
    }

    func testAKeyTheSourceDoesNotHaveIsRefused() throws {
        let other = try AsymmetricKey.generate(.ed25519)
        let (reply, event) = respond(MemoryKeySource(), try Wire.signRequest(other, data: [1]))
        XCTAssertEqual(reply, failure)
        XCTAssertEqual(event, .signRefused(KeychainError(.itemNotFound)))
    }

    /// Only the key the client named signs, whatever the source hands over.
    func testASourceGivingAnotherKeyIsRefused() throws {
        let (reply, event) = respond(WrongKeySource(), try Wire.signRequest(AgentTestKeys.named("ed25519"), data: [1]))
        XCTAssertEqual(reply, failure)
        guard case .signRefused(let error) = event else { return XCTFail("\(String(describing: event))") }
        XCTAssertEqual(error.code, .itemNotFound)
    }

    /// ssh-add KEY, -d, -D, -x, -X, smartcards: failure and an event; the
    /// contents (a private key, a passphrase) are never parsed.
    func testKeyManagementRequestsAreRefused() {
        let cases: [(UInt8, AgentEvent)] = [(17, .addRefused), (25, .addRefused), (20, .addRefused), (26, .addRefused),
                                            (18, .removeRefused), (19, .removeRefused), (21, .removeRefused),
                                            (22, .lockRefused), (23, .lockRefused)]
        for (type, expected) in cases {
            for contents in [[], Wire.string("ssh-ed25519") + [0xff, 0xff], [UInt8](repeating: 0x41, count: 300)] {
                let (reply, event) = respond(MemoryKeySource(), Wire.message(type, contents))
                XCTAssertEqual(reply, failure, "type \(type)")
                XCTAssertEqual(event, expected, "type \(type)")
            }
        }
    }

    /// Extensions (session-bind@openssh.com from every ssh, query) and the
    /// protocol 1 requests OpenSSH's clients still send get a quiet failure.
    func testExtensionsAndProtocol1AreQuietFailures() {
        for message in [Wire.message(27, Wire.string("session-bind@openssh.com") + Wire.string([1, 2])),
                        Wire.message(27, Wire.string("query")), Wire.message(9), Wire.message(1), Wire.message(24, [1])] {
            let (reply, event) = respond(MemoryKeySource(), message)
            XCTAssertEqual(reply, failure)
            XCTAssertNil(event)
        }
    }

    func testUnknownMessagesAreRefused() {
        for type: UInt8 in [0, 2, 4, 10, 12, 14, 28, 30, 100, 255] {
            let (reply, event) = respond(MemoryKeySource(), Wire.message(type, [1, 2, 3]))
            XCTAssertEqual(reply, failure, "type \(type)")
            XCTAssertEqual(event, .unsupported(type))
        }
    }

    /// Every truncation of a sign request, trailing bytes, lengths past the
    /// end, an empty message, a bad extension name: failure, never a crash.
    func testMalformedRequestsAreFailures() throws {
        let sign = try Wire.signRequest(AgentTestKeys.named("p256"), data: Array(repeating: 7, count: 40), flags: 0)
        var malformed: [[UInt8]] = [[], Wire.message(11, [0]), sign + [0], Wire.message(27), Wire.message(27, Wire.string([0xff, 0xfe]))]
        for cut in 1..<sign.count { malformed.append(Array(sign[0..<cut])) }
        malformed.append(Wire.message(13, Wire.uint32(0xffff_ffff)))
        malformed.append(Wire.message(13, Wire.uint32(0x7fff_ffff) + [1, 2]))
        malformed.append(Wire.message(13, Wire.string([]) + Wire.string([]) ))
        for message in malformed {
            let (reply, event) = respond(MemoryKeySource(), message)
            XCTAssertEqual(reply, failure, "\(message.prefix(12))")
            guard case .malformed(let error) = event else { XCTFail("\(message.prefix(12)): \(String(describing: event))"); continue }
            XCTAssertEqual(error.code, .decode)
        }
    }

    /// A sign request that parses but names no key SSH knows.
    func testGarbageKeyBlobsAreRefused() throws {
        for blob in [[UInt8](), Wire.string("ssh-dss") + Wire.string([1]), Wire.string("ssh-ed25519") + Wire.string([1, 2, 3]), [0xff]] {
            let (reply, event) = respond(MemoryKeySource(), Wire.message(13, Wire.string(blob) + Wire.string([1]) + Wire.uint32(0)))
            XCTAssertEqual(reply, failure)
            guard case .signRefused(let error) = event else { XCTFail("\(String(describing: event))"); continue }
            XCTAssertEqual(error.code, .itemNotFound)
        }
    }

    /// More identities than one message can hold: a clear failure, not a reply the client would reject.
    func testTooManyIdentitiesAreAFailure() throws {
        let key = AgentTestKeys.named("ed25519")
        let comment = String(repeating: "c", count: 1000)
        let many = Array(repeating: (name: comment, key: key), count: 300)
        let (reply, event) = respond(MemoryKeySource(many), Wire.message(11))
        XCTAssertEqual(reply, failure)
        guard case .identitiesRefused(let error) = event else { return XCTFail("\(String(describing: event))") }
        XCTAssertEqual(error.code, .dataTooLarge)
    }

    /// Random messages, and random mutations of valid ones: every reply is a
    /// well-formed frame of a message a client expects; nothing crashes.
    func testRandomMessagesNeverCrash() throws {
        var rng = SplitMix(seed: 0x5eed_a6e7)
        let source = MemoryKeySource()
        let valid = [Wire.message(11), try Wire.signRequest(AgentTestKeys.named("ed25519"), data: [1, 2, 3]),
                     try Wire.signRequest(AgentTestKeys.named("p384"), data: [4], flags: 2), Wire.message(27, Wire.string("query"))]
        for round in 0..<4000 {
            var message: [UInt8]
            if round % 2 == 0 {
                message = (0..<Int(rng.next() % 64)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            } else {
                message = valid[Int(rng.next() % UInt64(valid.count))]
                for _ in 0...Int(rng.next() % 4) where !message.isEmpty {
                    let at = Int(rng.next() % UInt64(message.count))
                    switch rng.next() % 3 {
                    case 0: message[at] = UInt8(truncatingIfNeeded: rng.next())
                    case 1: message.removeSubrange(at...)
                    default: message.insert(UInt8(truncatingIfNeeded: rng.next()), at: at)
                    }
                }
            }
            let (reply, _) = respond(source, message)
            let (type, _) = try Wire.unframe(reply)
            XCTAssertTrue([5, 12, 14].contains(type), "reply type \(type) to \(message)")
        }
    }
}
