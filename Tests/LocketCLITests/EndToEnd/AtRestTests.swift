import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §7 at rest: nothing in the clear in the keychain file, its WAL and
/// shared memory; sealed values bound to their rows; damaged or foreign files
/// refused without a crash.
final class EndToEndAtRestTests: EndToEndCase {
    /// Engine and command-line logic: in-process through `CLI.run` (issue 38);
    /// what needs the binary here (another process, a terminal, its own name) runs it.
    override class var inProcess: Bool { true }

    static let distinctive = [
        "service": "SVC-aTr3st-9f1c", "account": "ACCT-aTr3st-77ab", "label": "LABEL-aTr3st-c0de",
        "comment": "COMMENT-aTr3st-5e5e", "description": "KIND-aTr3st-4d4d", "generic": "GENERIC-aTr3st-3c3c",
        "server": "SRV-aTr3st.example", "path": "/PATH-aTr3st-2b2b", "domain": "SDMN-aTr3st-1a1a",
        "secret": "SECRET-aTr3st-0f0f", "inetSecret": "INETSECRET-aTr3st-e1e1",
    ]

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    private var keychain: String { sandbox.loginKeychain }

    /// The keychain file and its SQLite companions, as bytes.
    private func filesOnDisk() -> [(String, [UInt8])] {
        ["", "-wal", "-shm", "-journal"].compactMap { suffix in
            let path = keychain + suffix
            guard let data = FileManager.default.contents(atPath: path) else { return nil }
            return (path, Array(data))
        }
    }

    private func assertNoPlaintext(_ strings: [String], file: StaticString = #filePath, line: UInt = #line) {
        let files = filesOnDisk()
        XCTAssertTrue(files.contains { $0.0 == keychain }, file: file, line: line)
        for (path, bytes) in files {
            for s in strings {
                XCTAssertFalse(Self.contains(bytes, Array(s.utf8)), "\(path) contains \(s) in the clear", file: file, line: line)
                // A UTF-16 copy would be just as readable.
                let utf16 = s.utf16.flatMap { [UInt8($0 & 0xff), UInt8($0 >> 8)] }
                XCTAssertFalse(Self.contains(bytes, utf16), "\(path) contains \(s) as UTF-16", file: file, line: line)
            }
        }
    }

    func testNoAttributeOrSecretInTheClear() {
        let d = Self.distinctive
        add("-s", d["service"]!, "-a", d["account"]!, "-l", d["label"]!, "-j", d["comment"]!, "-D", d["description"]!,
            "-G", d["generic"]!, secret: d["secret"]!)
        add("--class", "inet", "-s", d["server"]!, "-a", d["account"]!, "-p", d["path"]!, "-d", d["domain"]!,
            "-j", d["comment"]!, secret: d["inetSecret"]!)
        // Items whose secret is not UTF-8 and whose label defaults to the service.
        addBytes("-s", d["service"]! + "-2", data: Array(d["secret"]!.utf8) + [0xff])
        // Check while the data is likely still in the WAL.
        assertNoPlaintext(Array(d.values))
        // Updates, and a checkpoint forced by a later open, do not leak either.
        ok("update", "-s", d["service"]!, "--set", "comment=" + d["comment"]! + "-updated", "-w", input: .text(d["secret"]! + "-v2\n"))
        ok("dump", "--data")
        checkpoint()
        assertNoPlaintext(Array(d.values) + [d["comment"]! + "-updated", d["secret"]! + "-v2"])
        // Deleted items leave nothing readable behind either (secure_delete or sealing).
        ok("delete", "-s", d["service"]!)
        assertNoPlaintext(Array(d.values))
    }

    // MARK: - Tampering with rows

    private func addThree() {
        add("-s", "alpha", "-a", "a", secret: "secret-alpha")
        add("-s", "beta", "-a", "b", secret: "secret-beta")
        add("-s", "gamma", "-a", "c", secret: "secret-gamma")
    }

    /// Keys and certificates (issue 13): subject, issuer, common name, e-mail,
    /// label, tag and the private key's bytes are sealed like any attribute.
    func testNoKeyOrCertificateAttributeInTheClear() {
        makeCA(cn: "ISSUER-aTr3st-9a9a")
        makeKey("p256", "k.key")
        makeLeaf(key: "k.key", cert: "k.pem", cn: "CN-aTr3st-8b8b", email: "mail-aTr3st-6d6d@example.com")
        XCTAssertTrue(FileManager.default.createFile(atPath: key("both.pem"), contents: Data(keyFileBytes("k.key") + keyFileBytes("k.pem"))))
        expect(0, "import", key("both.pem"), "--tag", "TAG-aTr3st-7c7c")
        // The private scalar, as openssl prints it.
        let text = openssl(["ec", "-in", key("k.key"), "-noout", "-text"]).out
        let hex = text.components(separatedBy: "priv:")[1].components(separatedBy: "pub:")[0].filter(\.isHexDigit)
        let scalar = stride(from: 0, to: hex.count - 1, by: 2).map { i -> UInt8 in
            UInt8(String(hex[hex.index(hex.startIndex, offsetBy: i)...].prefix(2)), radix: 16)!
        }
        XCTAssertGreaterThanOrEqual(scalar.count, 32)
        let strings = ["ISSUER-aTr3st-9a9a", "CN-aTr3st-8b8b", "mail-aTr3st-6d6d", "TAG-aTr3st-7c7c", "Locket E2E"]
        assertNoPlaintext(strings)
        for (path, bytes) in filesOnDisk() {
            XCTAssertFalse(Self.contains(bytes, Array(scalar.suffix(16))), "\(path) holds a slice of the private key")
        }
        ok("update", "--class", "keys", "--tag", "TAG-aTr3st-7c7c", "--set", "label=LABEL-aTr3st-5f5f")
        ok("find", "--class", "identity", "--tag", "TAG-aTr3st-7c7c")
        assertNoPlaintext(strings + ["LABEL-aTr3st-5f5f"])
    }

    func testSwappedSecretsFailWithDecodeOthersUnaffected() throws {
        addThree()
        try withDatabase { db in
            try swap(db, column: "data", between: 1, and: 2)
        }
        for name in ["alpha", "beta"] {
            let result = expect(93, "find", "-s", name, "-w")
            assertError(result, "errSecDecode", -26275)
            XCTAssertFalse(result.out.contains("secret-"), "a moved secret must never be printed")
        }
        XCTAssertEqual(secret("-s", "gamma"), Array("secret-gamma".utf8))
        // The attributes were not moved: they still open.
        XCTAssertEqual(expect(0, "find", "-s", "alpha").fields["account"], "a")
        // A failure to read never deletes anything.
        XCTAssertEqual(try rowCount(), 3)
        // A damaged item can still be deleted (by its digests), and only it.
        ok("delete", "-s", "alpha")
        XCTAssertEqual(try rowCount(), 2)
        expect(93, "find", "-s", "beta", "-w")
        XCTAssertEqual(secret("-s", "gamma"), Array("secret-gamma".utf8))
    }

    func testSwappedAttributesFailWithDecodeOthersUnaffected() throws {
        addThree()
        try withDatabase { db in
            try swap(db, column: "attrs", between: 1, and: 2)
        }
        for name in ["alpha", "beta"] {
            let result = expect(93, "find", "-s", name)
            assertError(result, "errSecDecode", -26275)
            expect(93, "find", "-s", name, "-w")
        }
        XCTAssertEqual(expect(0, "find", "-s", "gamma").fields["account"], "c")
        XCTAssertEqual(secret("-s", "gamma"), Array("secret-gamma".utf8))
        // dump lists the others and reports the damage.
        let dump = expect(93, "dump")
        XCTAssertTrue(dump.out.contains("service: gamma"), dump.out)
        XCTAssertTrue(dump.out.contains("status: damaged"), dump.out)
        let json = expect(93, "--json", "dump")
        let items = try json.jsonArray()
        XCTAssertEqual(items.map { $0["status"] as? String }, ["damaged", "damaged", "available"])
        XCTAssertNil(items[0]["service"], "a damaged item shows no attributes")
        XCTAssertEqual(try json.jsonError()["error"] as? String, "errSecDecode")
        XCTAssertEqual(try rowCount(), 3)
    }

    func testFlippedByteFailsThatItemOnly() throws {
        addThree()
        try withDatabase { db in
            var blob = try column(db, "data", row: 2)
            blob[blob.count / 2] ^= 0x01
            try set(db, "data", row: 2, blob)
        }
        let result = expect(93, "find", "-s", "beta", "-w")
        assertError(result, "errSecDecode", -26275)
        XCTAssertEqual(secret("-s", "alpha"), Array("secret-alpha".utf8))
        XCTAssertEqual(secret("-s", "gamma"), Array("secret-gamma".utf8))

        // The same for one byte of the sealed attributes.
        try withDatabase { db in
            var blob = try column(db, "attrs", row: 3)
            blob[blob.count - 1] ^= 0x80
            try set(db, "attrs", row: 3, blob)
        }
        expect(93, "find", "-s", "gamma")
        XCTAssertEqual(secret("-s", "alpha"), Array("secret-alpha".utf8))
        XCTAssertEqual(try rowCount(), 3)
    }

    func testEditedAccessGroupOrClassColumnFailsThatRowOnly() throws {
        addThree()
        add("-s", "delta", "-a", "d", secret: "secret-delta")
        try withDatabase { db in
            try execute(db, "UPDATE items SET agrp = 'other.group' WHERE id = 1")
            try execute(db, "UPDATE items SET pdmn = 'ck' WHERE id = 2")
            try execute(db, "UPDATE items SET pdmn = 'dk' WHERE id = 3")
        }
        for name in ["alpha", "beta", "gamma"] {
            let result = locket("find", "-s", name, "-w")
            XCTAssertTrue([93, 36].contains(result.status ?? -1), "\(name): \(result.summary)")
            XCTAssertFalse(result.out.contains("secret-"), result.summary)
            XCTAssertNotEqual(result.status, 44, "an existing item must not be reported missing")
        }
        XCTAssertEqual(secret("-s", "delta"), Array("secret-delta".utf8))
        // An unknown protection class is damage too.
        try withDatabase { db in try execute(db, "UPDATE items SET pdmn = 'zz' WHERE id = 4") }
        let unknown = locket("find", "-s", "delta", "-w")
        XCTAssertTrue([93, 36].contains(unknown.status ?? -1), unknown.summary)
        XCTAssertEqual(try rowCount(), 4)
    }

    func testAlteredClassColumnIsNotMistakenForAnotherItem() throws {
        addThree()
        // Moving a generic password into the internet-password class must not make it readable there.
        try withDatabase { db in try execute(db, "UPDATE items SET cls = 'inet' WHERE id = 1") }
        let result = locket("find", "--class", "inet", "--all", "-w")
        XCTAssertNotEqual(result.status, 0, result.summary)
        XCTAssertFalse(result.out.contains("secret-alpha"), result.summary)
        XCTAssertEqual(secret("-s", "beta"), Array("secret-beta".utf8))
    }

    // MARK: - Files that are not keychains

    func testRandomBytesAreNotAKeychain() throws {
        let path = sandbox.root + "/random.keychain"
        var bytes = [UInt8](repeating: 0, count: 8192)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]))
        for args in [["find"], ["add", "-s", "x"], ["dump"], ["unlock", "--password-stdin"], ["delete", "--all"]] {
            let result = locket(["-k", path] + args, input: .text("pw\n"))
            XCTAssertTrue([49, 93].contains(result.status ?? -1), result.summary)
            XCTAssertTrue(result.err.hasPrefix("locket: error: "), result.summary)
        }
        XCTAssertEqual(Array(FileManager.default.contents(atPath: path) ?? Data()), bytes, "a foreign file must not be modified")
    }

    func testEmptyAndForeignSQLiteFilesAreNotAKeychain() throws {
        let empty = sandbox.root + "/empty.keychain"
        XCTAssertTrue(FileManager.default.createFile(atPath: empty, contents: Data(), attributes: [.posixPermissions: 0o600]))
        let foreign = sandbox.root + "/foreign.keychain"
        XCTAssertTrue(FileManager.default.createFile(atPath: foreign, contents: Data(), attributes: [.posixPermissions: 0o600]))
        try ReliabilityDatabase(foreign).execute("CREATE TABLE meta(x); CREATE TABLE other(y); INSERT INTO other VALUES (1)")
        chmod(foreign, 0o600)
        for path in [empty, foreign] {
            for args in [["find"], ["dump"], ["add", "-s", "x"], ["unlock", "--password-stdin"]] {
                let result = locket(["-k", path] + args, input: .text("pw\n"))
                XCTAssertTrue([49, 93].contains(result.status ?? -1), result.summary)
                XCTAssertTrue(result.err.contains("errSecInvalidKeychain") || result.err.contains("errSecDecode"), result.summary)
            }
        }
        // A keychain whose meta table was emptied is no keychain either.
        try withDatabase { db in try execute(db, "DELETE FROM meta") }
        let result = locket("find")
        XCTAssertTrue([49, 93].contains(result.status ?? -1), result.summary)
    }

    func testTruncatedKeychainDoesNotCrash() throws {
        addThree()
        checkpoint()
        let data = try XCTUnwrap(FileManager.default.contents(atPath: keychain))
        for suffix in ["-wal", "-shm"] { unlink(keychain + suffix) }
        XCTAssertTrue(FileManager.default.createFile(atPath: keychain, contents: data.prefix(data.count / 2),
                                                     attributes: [.posixPermissions: 0o600]))
        for args in [["find", "-s", "alpha", "-w"], ["dump"], ["find", "-s", "gamma"]] {
            let result = locket(args)
            XCTAssertNotEqual(result.status, 0, result.summary)
            XCTAssertNotNil(result.status, "no signal exit: \(result.summary)")
        }
    }

    // MARK: - File safety

    func testOtherWritableKeychainIsRefused() {
        add("-s", "svc", secret: "x")
        for permissions: mode_t in [0o666, 0o620, 0o602] {
            XCTAssertEqual(chmod(keychain, permissions), 0)
            for args in [["find", "-s", "svc", "-w"], ["add", "-s", "new"], ["dump"]] {
                let result = locket(args)
                XCTAssertNotEqual(result.status, 0, "mode \(String(permissions, radix: 8)): \(result.summary)")
                XCTAssertTrue(result.err.hasPrefix("locket: error: "), result.summary)
                XCTAssertTrue(result.err.contains("writable"), "the message should say what is wrong: \(result.summary)")
                XCTAssertTrue(result.err.contains(keychain), "the message should name the file: \(result.summary)")
                XCTAssertEqual(result.stdout, [], result.summary)
            }
        }
        XCTAssertEqual(chmod(keychain, 0o600), 0)
        XCTAssertEqual(secret("-s", "svc"), Array("x".utf8))
        expect(44, "find", "-s", "new")
    }

    func testSymlinkedKeychainIsRefused() {
        add("-s", "svc", secret: "x")
        let link = sandbox.dataHome + "/locket/linked.keychain"
        XCTAssertEqual(symlink(keychain, link), 0)
        for args in [["find", "-s", "svc", "-w"], ["add", "-s", "new"], ["dump"], ["init", "--no-password"]] {
            let result = locket(["-k", "linked"] + args)
            XCTAssertNotEqual(result.status, 0, result.summary)
            XCTAssertEqual(result.stdout, [], result.summary)
            XCTAssertTrue(result.err.hasPrefix("locket: error: "), result.summary)
        }
        XCTAssertTrue(locket("-k", "linked", "find").err.contains("symbolic link"))
        // A dangling symlink is refused too, and init does not create through it.
        let dangling = sandbox.root + "/dangling.keychain"
        XCTAssertEqual(symlink(sandbox.root + "/target-does-not-exist", dangling), 0)
        let initThrough = locket("-k", dangling, "init", "--no-password")
        XCTAssertNotEqual(initThrough.status, 0, initThrough.summary)
        XCTAssertNil(mode(sandbox.root + "/target-does-not-exist"), "init followed a symlink")
        expect(44, "find", "-s", "new")
    }

    // MARK: - SQLite from the test (ReliabilityDatabase, LocketTestSupport)

    private struct SQLiteError: Error, CustomStringConvertible {
        let description: String
    }

    /// Opens the keychain with SQLite directly (no locket process running), runs `body`, closes.
    private func withDatabase(_ body: (ReliabilityDatabase) throws -> Void) throws {
        try body(try ReliabilityDatabase(keychain))
    }

    private func execute(_ db: ReliabilityDatabase, _ sql: String) throws {
        try db.execute(sql)
    }

    private func column(_ db: ReliabilityDatabase, _ name: String, row: Int64) throws -> [UInt8] {
        guard let first = try db.rows("SELECT \(name) FROM items WHERE id = \(row)").first else {
            throw SQLiteError(description: "no row \(row)")
        }
        return first[0] ?? []
    }

    private func set(_ db: ReliabilityDatabase, _ name: String, row: Int64, _ value: [UInt8]) throws {
        guard try db.change("UPDATE items SET \(name) = ? WHERE id = \(row)", [value]) == 1 else {
            throw SQLiteError(description: "update of row \(row) changed no row")
        }
    }

    private func swap(_ db: ReliabilityDatabase, column name: String, between a: Int64, and b: Int64) throws {
        let first = try column(db, name, row: a)
        let second = try column(db, name, row: b)
        XCTAssertNotEqual(first, second)
        try set(db, name, row: a, second)
        try set(db, name, row: b, first)
    }

    private func rowCount() throws -> Int {
        var count = 0
        try withDatabase { db in count = Int(try db.text("SELECT count(*) FROM items")) ?? -1 }
        return count
    }

    /// Moves the WAL's pages into the main file.
    private func checkpoint() {
        try? withDatabase { db in try execute(db, "PRAGMA wal_checkpoint(TRUNCATE)") }
    }
}
