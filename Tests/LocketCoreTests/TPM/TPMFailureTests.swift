import Foundation
import LocketCore
import XCTest

/// What goes wrong at a TPM, each as its KeychainError (SPEC §21): no TPM,
/// a key of another TPM, wrong application passwords counted by the TPM's
/// own lockout, a TPM that dies or hangs in the middle of a request.
final class TPMFailureTests: TPMTestCase {
    func testWithoutATPMTheTokenIsNotAvailableAndSaysWhy() throws {
        // Neither LOCKET_TPM nor the device: nothing is started.
        let none = assertKeychainError(.notAvailable) { try TPMLocation.find(environment: Environment([:]), device: fixture.dir + "/tpmrm0") }
        XCTAssertEqual(none?.reason, .noTPM)
        XCTAssertTrue(none?.message.contains("does not exist and LOCKET_TPM is not set") == true, "\(none!)")
        // A device path there is found without opening it.
        write("tpmrm0", [])
        XCTAssertEqual(try TPMLocation.find(environment: Environment([:]), device: fixture.dir + "/tpmrm0").tcti, "device:\(fixture.dir)/tpmrm0")
        // LOCKET_TPM wins, and names only the transports of a TPM.
        XCTAssertEqual(try TPMLocation.find(environment: Environment(["LOCKET_TPM": "swtpm:port=1"]), device: "/nonexistent").source, .environment)
        for bad in ["cmd:tpm2-abrmd", "../../tmp/evil:x", "swtpm:port=1\u{7}"] {
            let refused = assertKeychainError(.notAvailable) { try TPMLocation.find(environment: Environment(["LOCKET_TPM": bad])) }
            XCTAssertEqual(refused?.reason, .noTPM, bad)
        }
        // LOCKET_TPM naming a port where nothing listens, and a device path that is not there.
        let port = try Loopback.freePort()
        for tcti in ["swtpm:host=127.0.0.1,port=\(port)", "device:\(fixture.dir)/absent"] {
            let client = TPMClient(location: TPMLocation(tcti: tcti, source: .environment), helper: try helperPath(), environment: Environment([:]))
            let refused = assertKeychainError(.notAvailable) { try client.createKey() }
            XCTAssertEqual(refused?.reason, .noTPM)
            XCTAssertTrue(refused?.message.hasPrefix("no TPM could be used: ") == true, "\(refused!)")
            XCTAssertNil(client.helperProcessID, "the helper of a TPM that isn't there is not kept")
        }
        // The helper missing.
        let missing = TPMClient(location: TPMLocation(tcti: "swtpm:port=1", source: .environment), helper: fixture.dir + "/locket-tpm", environment: Environment([:]))
        let absent = assertKeychainError(.notAvailable) { try missing.probe() }
        XCTAssertEqual(absent?.reason, .noTPM)
        XCTAssertTrue(absent?.message.contains("locket-tpm is missing") == true, "\(absent!)")
    }

    func testAKeyFromAnotherTPMIsRefusedByName() throws {
        let mine = try client(try sharedTPM())
        let key = try mine.createKey()
        let theirs = try client(try sharedTPM(1))
        let refused = assertKeychainError(.decode) { try theirs.sign(Array("x".utf8), algorithm: .ecdsaMessageX962SHA256, with: key) }
        XCTAssertEqual(refused?.reason, .boundToOtherDevice)
        XCTAssertTrue(refused?.message.contains("made by another TPM") == true, "\(refused!)")
        assertKeychainError(.decode) { try theirs.decrypt(try key.publicKey.encrypt([1], algorithm: .eciesCofactorVariableIVX963SHA256AESGCM), with: key) }
        // Its own TPM still signs with it, and the other one with its own keys.
        _ = try mine.sign(Array("x".utf8), algorithm: .ecdsaMessageX962SHA256, with: key)
        _ = try theirs.sign(Array("x".utf8), algorithm: .ecdsaMessageX962SHA256, with: try theirs.createKey())
    }

    /// The application password is the key's TPM authorization value: the
    /// TPM, not locket, counts the wrong ones (swtpm locks out at 3), and a
    /// key without one keeps working through the lockout.
    func testWrongApplicationPasswordsAreCountedByTheTPMsLockout() throws {
        let tpm = try softwareTPM()
        let client = try client(tpm)
        let key = try client.createKey(authorization: try password("right"))
        let open = try client.createKey()
        let message = Array("m".utf8)
        XCTAssertEqual(try client.lockoutStatus().counter, 0)
        let wrong = assertKeychainError(.authFailed) { try client.sign(message, algorithm: .ecdsaMessageX962SHA256, with: key, authorization: try password("wrong")) }
        XCTAssertTrue(wrong?.message.contains("1 of 3 failures") == true, "\(wrong!)")
        XCTAssertEqual(try lockoutCounter(tpm, client), 1, "tpm2_getcap sees the TPM's own counter")
        _ = try client.sign(message, algorithm: .ecdsaMessageX962SHA256, with: key, authorization: try password("right"))
        assertKeychainError(.interactionNotAllowed) { try client.sign(message, algorithm: .ecdsaMessageX962SHA256, with: key) }
        XCTAssertEqual(try lockoutCounter(tpm, client), 1, "a missing password is refused before the TPM")
        for _ in 0..<2 { assertKeychainError(.authFailed) { try client.sign(message, algorithm: .ecdsaMessageX962SHA256, with: key, authorization: try password("wrong")) } }
        XCTAssertEqual(try lockoutCounter(tpm, client), 3)
        XCTAssertTrue(try client.lockoutStatus().inLockout)
        let locked = assertKeychainError(.authFailed) { try client.sign(message, algorithm: .ecdsaMessageX962SHA256, with: key, authorization: try password("right")) }
        XCTAssertEqual(locked?.reason, .tpmLockout(seconds: 1000))
        XCTAssertTrue(locked?.message.contains("dictionary-attack lockout") == true, "\(locked!)")
        _ = try client.sign(message, algorithm: .ecdsaMessageX962SHA256, with: open)
    }

    /// swtpm killed while the helper waits for its answer: a clear error at
    /// once, the helper gone, nothing left hanging; the next request says no TPM.
    func testATPMKilledMidSignatureIsAClearErrorNotAHang() throws {
        let tpm = try softwareTPM()
        let client = try client(tpm)
        let key = try client.createKey()
        let helper = try XCTUnwrap(client.helperProcessID)
        tpm.pause()
        let swtpm = tpm.pid
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { kill(swtpm, SIGKILL) }
        let started = Date()
        let lost = assertKeychainError(.io) { try client.sign(Array("m".utf8), algorithm: .ecdsaMessageX962SHA256, with: key) }
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)
        XCTAssertTrue(lost?.message.contains("the TPM stopped answering while signing") == true, "\(lost!)")
        XCTAssertNil(client.helperProcessID)
        XCTAssertTrue(isGone(helper))
        let after = assertKeychainError(.notAvailable) { try client.sign(Array("m".utf8), algorithm: .ecdsaMessageX962SHA256, with: key) }
        XCTAssertEqual(after?.reason, .noTPM)
    }

    /// A TPM that stops answering without closing: the client's deadline
    /// kills the helper, and says so.
    func testASilentTPMMeetsTheDeadline() throws {
        let tpm = try softwareTPM()
        let client = try client(tpm, timeout: 1)
        let key = try client.createKey()
        let helper = try XCTUnwrap(client.helperProcessID)
        tpm.pause()
        defer { tpm.resume() }
        let started = Date()
        let silent = assertKeychainError(.io) { try client.sign(Array("m".utf8), algorithm: .ecdsaMessageX962SHA256, with: key) }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        XCTAssertTrue(silent?.message.contains("did not answer within 1 s while signing") == true, "\(silent!)")
        XCTAssertNil(client.helperProcessID)
        XCTAssertTrue(isGone(helper))
    }

    /// A key without an application password signs outside the HMAC
    /// session: a digest changed between the helper and the TPM (a proxy on
    /// the swtpm's socket flips a byte of TPM2_Sign's digest) gets a
    /// signature of something else, which locket refuses instead of handing on.
    func testASignatureOfAnotherDigestIsRefused() throws {
        let tpm = try sharedTPM()
        let python = try XCTUnwrap(Tools.find("python3"), "python3 runs the proxy (make test-deps installs it)")
        let proxy = try BackgroundProcess(python, ["-c", Self.tamperingProxy, String(tpm.port)], environment: ["PATH": "/usr/bin:/bin"])
        defer { proxy.terminate() }
        while proxy.out.isEmpty && !proxy.hasExited && proxy.elapsed < 10 { proxy.pump(0.05) }
        let port = try XCTUnwrap(Int(proxy.out.trimmingCharacters(in: .whitespacesAndNewlines)), "the proxy's port: \(proxy.err)")
        let direct = try client(tpm)
        let key = try direct.createKey()
        let message = Array("signed through a tampering proxy".utf8)
        XCTAssertTrue(try key.publicKey.verify(signature: try direct.sign(message, algorithm: .ecdsaMessageX962SHA256, with: key),
                                               for: message, algorithm: .ecdsaMessageX962SHA256))
        direct.close()
        let tampered = TPMClient(location: TPMLocation(tcti: "swtpm:host=127.0.0.1,port=\(port)", source: .environment), helper: try helperPath(),
                                 timeout: 20, environment: Environment([:]))
        defer { tampered.close() }
        let refused = assertKeychainError(.io) { try tampered.sign(message, algorithm: .ecdsaMessageX962SHA256, with: key) }
        XCTAssertTrue(refused?.message.contains("does not verify with the key's public key") == true, "\(String(describing: refused))")
        proxy.pump(0.1)
        XCTAssertTrue(proxy.err.contains("flipped"), "the proxy changed a TPM2_Sign: \(proxy.err)")
    }

    /// Relays swtpm's two ports (command, control) from two adjacent free
    /// ones it prints, flipping the first byte of every TPM2_Sign's digest.
    static let tamperingProxy = #"""
    import socket, struct, sys, threading
    upstream = int(sys.argv[1])
    def listen_pair():
        while True:
            first = socket.socket(); first.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            first.bind(("127.0.0.1", 0)); port = first.getsockname()[1]
            second = socket.socket(); second.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                second.bind(("127.0.0.1", port + 1))
                return port, first, second
            except OSError:
                first.close(); second.close()
    def pump(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            try: s.shutdown(socket.SHUT_RDWR)
            except OSError: pass
    def commands(client, server):
        def exactly(n):
            data = b""
            while len(data) < n:
                chunk = client.recv(n - len(data))
                if not chunk: raise OSError("closed")
                data += chunk
            return data
        try:
            while True:
                header = exactly(10)
                size, code = struct.unpack(">II", header[2:10])
                command = bytearray(header + exactly(size - 10))
                if code == 0x15D:  # TPM2_Sign: handle, authorization area, TPM2B_DIGEST
                    auth = struct.unpack(">I", command[14:18])[0]
                    command[18 + auth + 2] ^= 0xff
                    print("flipped", file=sys.stderr, flush=True)
                server.sendall(command)
        except OSError:
            pass
        pump(client, server)
    def serve(listener, port, tamper):
        listener.listen(4)
        while True:
            client, _ = listener.accept()
            server = socket.create_connection(("127.0.0.1", port))
            threading.Thread(target=pump, args=(server, client), daemon=True).start()
            threading.Thread(target=commands if tamper else pump, args=(client, server), daemon=True).start()
    port, data, control = listen_pair()
    threading.Thread(target=serve, args=(control, upstream + 1, False), daemon=True).start()
    print(port, flush=True)
    serve(data, upstream, True)
    """#

    /// TPM2_PT_LOCKOUT_COUNTER as tpm2-tools reads it. swtpm serves one
    /// connection at a time: the client lets go of it first (its helper
    /// starts again on the next request).
    func lockoutCounter(_ tpm: SoftwareTPM, _ client: TPMClient) throws -> Int {
        client.close()
        let listing = try tpm2Tool("tpm2_getcap", ["properties-variable"], on: tpm).text
        guard let line = listing.split(separator: "\n").first(where: { $0.hasPrefix("TPM2_PT_LOCKOUT_COUNTER:") }),
              let value = Int(line.split(separator: "x").last ?? "", radix: 16) else {
            throw UnexpectedOutput("no TPM2_PT_LOCKOUT_COUNTER in tpm2_getcap's listing: \(listing)")
        }
        return value
    }
}
