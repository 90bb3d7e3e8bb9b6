import Foundation
import LocketSupport
import LocketTestSupport
import XCTest
@testable import LocketCore

#if canImport(Glibc)
import Glibc
#endif

/// Issue 12 item 4 (SPEC §7): the format 1 -> 2 migration runs in one
/// transaction with the first writing command. A process SIGKILLed at a
/// random instant during it leaves format 1 or format 2, never a mix, and
/// every item as it was.
final class EndToEndFormatMigrationCrashTests: EndToEndCase {
    /// Kills that must land while the migrating command runs (scaled by LOCKET_SOAK).
    static let killTarget = 16
    static let itemCount = 1500

    private var rng = ReliabilityRandom(seed: ReliabilityScale.seed)

    /// A format-1 keychain of `itemCount` items, written through the store's
    /// format-1 path (the engine migrates on every write otherwise), a few of
    /// the newest deleted so that the id sequence is above every id left.
    private func makeFormatOneKeychain() throws {
        let environment = Environment(sandbox.environment)
        let path = sandbox.loginKeychain
        try Keychain.create(at: path, password: SecureBytes(copying: Array(EndToEndCase.password.utf8)), kdf: .weakForTests,
                            environment: environment, format: 1)
        let keychain = try Keychain.open(at: path, environment: environment)
        (keychain.engine.storage as! FileStorage).migratesOnWrite = false
        try keychain.addBatch((0..<Self.itemCount).lazy.map { i in
            var item = NewItem(itemClass: i % 3 == 0 ? .internetPassword : .genericPassword)
            if i % 3 == 0 {
                item.attributes[.server] = Array("host-\(i).example".utf8)
                item.attributes[.account] = Array("user-\(i % 7)".utf8)
                if i % 2 == 0 { item.attributes[.port] = Array("\(8000 + i)".utf8) }
            } else {
                item.attributes[.service] = Array("svc-\(i)".utf8)
                item.attributes[.account] = Array("acct-\(i % 5)".utf8)
                if i % 4 == 0 { item.attributes[.comment] = Array("comment \(i)".utf8) }
            }
            // try!: a lazy map cannot throw (a throwing one is the eager map, every secret at once).
            return (item: item, data: try! SecureBytes(copying: Array("secret-\(i)".utf8)))
        })
        for i in (Self.itemCount - 3)..<Self.itemCount where i % 3 != 0 {
            var query = Query(itemClass: .genericPassword)
            try query.match(.service, Array("svc-\(i)".utf8))
            (keychain.engine.storage as! FileStorage).migratesOnWrite = false
            try keychain.delete(query)
        }
        XCTAssertEqual(format(), "1")
    }

    /// The meta format and the tables: "1" (i_ columns, no blind table), "2" (the reverse), or what is wrong.
    private func format() -> String {
        do {
            let db = try ReliabilityDatabase(sandbox.loginKeychain)
            let meta = try db.rows("SELECT value FROM meta WHERE name = 'format'").first?.first??.last.map(String.init) ?? "?"
            let columns = try db.text("SELECT count(*) FROM pragma_table_info('items') WHERE name LIKE 'i!_%' ESCAPE '!'")
            let blind = try db.text("SELECT count(*) FROM sqlite_master WHERE name = 'blind'")
            switch (meta, columns, blind) {
            case ("1", "14", "0"): return "1"
            case ("2", "0", "1"): return "2"
            default: return "a mix: meta \(meta), \(columns) i_ columns, \(blind) blind tables"
            }
        } catch {
            return "\(error)"
        }
    }

    /// Every item, `class/name` -> secret, through `dump --data`.
    private func items() -> [String: String] {
        let result = locket(["--json", "dump", "--data"])
        XCTAssertEqual(result.status, 0, result.summary)
        var out: [String: String] = [:]
        for item in ((try? result.json()) as? [[String: Any]]) ?? [] {
            let cls = item["class"] as? String ?? "?"
            let name = (cls == "inet" ? item["server"] : item["service"]) as? String ?? "?"
            out[cls + "/" + name] = ReliabilityOutput.secret(item).map { String(decoding: $0, as: UTF8.self) } ?? "?"
        }
        return out
    }

    func testAKilledMigrationLeavesFormatOneOrTwoAndEveryItem() throws {
        try makeFormatOneKeychain()
        let scratch = ReliabilityFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let pristine = scratch + "/format1.keychain"
        try ReliabilityDatabase.checkpoint(sandbox.loginKeychain)
        try FileManager.default.copyItem(atPath: sandbox.loginKeychain, toPath: pristine)
        ReliabilityFiles.write(scratch + "/stdin", Array("flying\n".utf8))
        let expected = items()
        XCTAssertEqual(expected.count, Self.itemCount - 2)
        XCTAssertEqual(format(), "1", "dump reads format 1 and writes nothing")

        var (trials, killed, migrated, stayed) = (0, 0, 0, 0)
        var longest = 0.0
        let target = ReliabilityScale.n(Self.killTarget)
        while killed < target && trials < target * 8 {
            trials += 1
            // Back to the format-1 copy; its generation mirror goes too (a put-back copy is otherwise a rollback).
            for suffix in ["", "-wal", "-shm"] { unlink(sandbox.loginKeychain + suffix) }
            try FileManager.default.copyItem(atPath: pristine, toPath: sandbox.loginKeychain)
            for file in ReliabilityFiles.allFiles(under: sandbox.stateHome) where file.hasSuffix(".generation") { unlink(file) }

            let bound = longest > 0 && trials > 4 ? longest * 1.25 + 1 : 60
            let delay = Double(rng.next() % 1000) / 1000 * bound
            guard let child = ReliabilityChild.spawn(binary, ["add", "-s", "in-flight", "-w"], environment: sandbox.environment,
                                                     stdin: scratch + "/stdin", stderr: scratch + "/stderr") else {
                return XCTFail("cannot spawn locket")
            }
            ReliabilityClock.sleep(milliseconds: delay)
            child.kill()
            let exit = child.wait()
            if exit.signal == SIGKILL {
                killed += 1
                longest = max(longest, delay)
            } else {
                XCTAssertEqual(exit.status, 0, String(decoding: ReliabilityFiles.read(scratch + "/stderr") ?? [], as: UTF8.self))
            }
            XCTAssertEqual(ReliabilityDatabase.integrity(sandbox.loginKeychain), "ok")
            var now = items()
            let layout = format()
            switch layout {
            case "1":
                stayed += 1
                XCTAssertNil(now["genp/in-flight"], "format 1 with the new item: the add committed without its migration")
            case "2":
                migrated += 1
                XCTAssertEqual(now.removeValue(forKey: "genp/in-flight"), "flying", "format 2 without the add that migrated it")
            default:
                XCTFail("round \(trials): \(layout)")
            }
            XCTAssertEqual(now, expected, "round \(trials) (\(layout)): items lost or changed")
            if now != expected { break }
        }
        // The last state migrates on the next write and still holds every item.
        add("-s", "after", secret: "later")
        XCTAssertEqual(format(), "2")
        var now = items()
        XCTAssertEqual(now.removeValue(forKey: "genp/after"), "later")
        now["genp/in-flight"] = nil
        XCTAssertEqual(now, expected)
        XCTAssertGreaterThanOrEqual(killed, target, "kills that landed during the migrating add (\(trials) trials)")
        ReliabilityReport.print("format migration kills", [("trials", "\(trials)"), ("killed", "\(killed)"),
                                                           ("left format 1", "\(stayed)"), ("left format 2", "\(migrated)"),
                                                           ("longest landed delay", String(format: "%.1f ms", longest))])
    }

    /// Format 2 keeps the primary key unique per class and group and finds
    /// items by every attribute, the empty value included.
    func testFormatTwoUniquenessAndLookups() throws {
        initKeychain()
        add("-s", "svc", "-a", "acct", "-l", "label", "-D", "desc", "-j", "comment", "-c", "crtr", "-C", "type", "-G", "gen", secret: "genp-1")
        add("-s", "svc", "-a", "other", secret: "genp-2")
        expect(45, "add", "-s", "svc", "-a", "acct", "-w", input: .text("dup\n"))
        XCTAssertEqual(format(), "2")
        for flag in [["-a", "acct"], ["-l", "label"], ["-D", "desc"], ["-j", "comment"], ["-c", "crtr"], ["-C", "type"], ["-G", "gen"],
                     ["-s", "svc", "-a", "acct"]] {
            XCTAssertEqual(secret(["find"] + flag + ["-w"]), "genp-1", "\(flag)")
        }
        XCTAssertEqual(secret(["find", "-s", "svc", "-a", "other", "-w"]), "genp-2")
        // inet: every attribute, and the empty port that git's credential helper relies on.
        add("--class", "inet", "-s", "host.example", "-a", "bob", "-r", "https", "-P", "8443", "-p", "/repo", "--security-domain", "realm",
            "--auth-type", "dflt", secret: "inet-port")
        add("--class", "inet", "-s", "host.example", "-a", "bob", "-r", "https", secret: "inet-noport")
        expect(45, "add", "--class", "inet", "-s", "host.example", "-a", "bob", "-r", "https", "-w", input: .text("dup\n"))
        for flag in [["-P", "8443"], ["-p", "/repo"], ["--security-domain", "realm"], ["--auth-type", "dflt"]] {
            XCTAssertEqual(secret(["find", "--class", "inet", "-s", "host.example"] + flag + ["-w"]), "inet-port", "\(flag)")
        }
        let credential = locket(["credential", "get"], input: .text("protocol=https\nhost=host.example\nusername=bob\n\n"))
        XCTAssertEqual(credential.status, 0, credential.summary)
        XCTAssertTrue(credential.out.contains("password=inet-noport\n"), credential.summary)
        ok("delete", "-s", "svc", "-a", "acct")
        expect(44, "find", "-l", "label")
        XCTAssertEqual(secret(["find", "-s", "svc", "-w"]), "genp-2")
    }

    private func secret(_ arguments: [String]) -> String {
        let result = locket(arguments)
        XCTAssertEqual(result.status, 0, result.summary)
        return result.out.hasSuffix("\n") ? String(result.out.dropLast()) : result.out
    }
}
