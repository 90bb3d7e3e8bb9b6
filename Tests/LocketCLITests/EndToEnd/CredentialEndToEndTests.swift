import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 5, item 2 (SPEC §9): `locket credential get|store|erase`, git's
/// credential-helper protocol over internet passwords, the behaviours git's
/// own helper tests demand, the binary run as `git-credential-locket`, and
/// `git credential fill/approve/reject` through it.
final class EndToEndCredentialTests: EndToEndCase {
    /// Engine and command-line logic: in-process through `CLI.run` (issue 38);
    /// what needs the binary here (another process, a terminal, its own name) runs it.
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    /// `locket credential OP` with `key=value` lines and a blank line on stdin.
    @discardableResult
    func credential(_ operation: String, _ lines: [String], via executable: String? = nil,
                    file: StaticString = #filePath, line: UInt = #line) -> RunResult {
        let input = Input.text(lines.map { $0 + "\n" }.joined() + "\n")
        let result: RunResult
        if let executable {
            result = Spawn.run(executable, [operation], environment: sandbox.environment, input: input, timeout: Self.timeout)
        } else {
            result = locket(["credential", operation], input: input, file: file, line: line)
        }
        XCTAssertEqual(result.status, 0, "a helper always exits 0: \(result.summary)", file: file, line: line)
        return result
    }

    /// Stores and asserts silence.
    func store(_ lines: [String], file: StaticString = #filePath, line: UInt = #line) {
        let result = credential("store", lines, file: file, line: line)
        XCTAssertEqual(result.out, "", file: file, line: line)
        XCTAssertEqual(result.err, "", "nothing on stderr on success: \(result.summary)", file: file, line: line)
    }

    /// Erases and asserts silence.
    func erase(_ lines: [String], file: StaticString = #filePath, line: UInt = #line) {
        let result = credential("erase", lines, file: file, line: line)
        XCTAssertEqual(result.out, "", file: file, line: line)
        XCTAssertEqual(result.err, "", "nothing on stderr on success: \(result.summary)", file: file, line: line)
    }

    /// What `get` prints, as lines; asserts nothing on stderr.
    func get(_ lines: [String], file: StaticString = #filePath, line: UInt = #line) -> [String] {
        let result = credential("get", lines, file: file, line: line)
        XCTAssertEqual(result.err, "", "nothing on stderr on success: \(result.summary)", file: file, line: line)
        XCTAssertTrue(result.out.isEmpty || result.out.hasSuffix("\n"), result.out, file: file, line: line)
        return result.out.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    /// Every internet password, from `find --class inet --all --json` (empty when none).
    func internetItems(file: StaticString = #filePath, line: UInt = #line) -> [[String: Any]] {
        let result = locket(["--json", "find", "--class", "inet", "--all", "-g"], file: file, line: line)
        if result.status == 44 { return [] }
        XCTAssertEqual(result.status, 0, result.summary, file: file, line: line)
        return (try? result.jsonArray(file: file, line: line)) ?? []
    }

    static let https = ["protocol=https", "host=example.com"]

    // MARK: - Mapping

    func testStoreMapsTheFieldsOntoAnInternetPassword() throws {
        store(["protocol=https", "host=git.example.com:8443", "path=org/repo.git", "username=alice", "password=s3cret"])
        let items = internetItems()
        XCTAssertEqual(items.count, 1)
        let item = try XCTUnwrap(items.first)
        XCTAssertEqual(item["protocol"] as? String, "htps")
        XCTAssertEqual(item["server"] as? String, "git.example.com")
        XCTAssertEqual(item["port"] as? Int, 8443)
        XCTAssertEqual(item["path"] as? String, "org/repo.git")
        XCTAssertEqual(item["account"] as? String, "alice")
        XCTAssertEqual(item["data"] as? String, "s3cret")
        XCTAssertEqual(get(["protocol=https", "host=git.example.com:8443", "path=org/repo.git"]),
                       ["username=alice", "password=s3cret"])
        // The port is part of the host: another port, or none, is another host.
        XCTAssertEqual(get(["protocol=https", "host=git.example.com"]), [])
        XCTAssertEqual(get(["protocol=https", "host=git.example.com:9999"]), [])
        XCTAssertEqual(get(["protocol=http", "host=git.example.com:8443"]), [])
        // A url= line stands for its parts.
        XCTAssertEqual(get(["url=https://git.example.com:8443/org/repo.git"]), ["username=alice", "password=s3cret"])
    }

    // MARK: - Absent fields are wildcards

    func testGetWithoutUsernameReturnsTheStoredOne() {
        store(Self.https + ["username=alice", "password=pw-a"])
        XCTAssertEqual(get(Self.https), ["username=alice", "password=pw-a"])
        // Without a path, any path matches.
        store(["protocol=https", "host=paths.example", "path=one.git", "username=u", "password=pw-path"])
        XCTAssertEqual(get(["protocol=https", "host=paths.example"]), ["username=u", "password=pw-path"])
        XCTAssertEqual(get(["protocol=https", "host=paths.example", "path=two.git"]), [])
        // Nothing stored for this host: nothing printed.
        XCTAssertEqual(get(["protocol=https", "host=other.example"]), [])
    }

    func testSeveralUsersOnOneHost() {
        store(Self.https + ["username=alice", "password=pw-a"])
        store(Self.https + ["username=bob", "password=pw-b"])
        XCTAssertEqual(get(Self.https + ["username=alice"]), ["username=alice", "password=pw-a"])
        XCTAssertEqual(get(Self.https + ["username=bob"]), ["username=bob", "password=pw-b"])
        XCTAssertEqual(get(Self.https + ["username=carol"]), [])
        // Forgetting one user keeps the other.
        erase(Self.https + ["username=alice"])
        XCTAssertEqual(get(Self.https + ["username=alice"]), [])
        XCTAssertEqual(get(Self.https), ["username=bob", "password=pw-b"])
    }

    func testEraseWithOnlyProtocolAndHostRemovesEveryMatch() {
        store(Self.https + ["username=alice", "password=pw-a"])
        store(Self.https + ["username=bob", "password=pw-b"])
        store(Self.https + ["path=repo.git", "username=carol", "password=pw-c"])
        store(["protocol=https", "host=other.example", "username=alice", "password=pw-other"])
        store(["protocol=http", "host=example.com", "username=alice", "password=pw-http"])
        XCTAssertEqual(internetItems().count, 5)
        erase(Self.https)
        let left = internetItems()
        XCTAssertEqual(left.count, 2, "\(left)")
        XCTAssertEqual(Set(left.compactMap { $0["data"] as? String }), ["pw-other", "pw-http"])
        // Erasing what is not there is no error either.
        erase(Self.https)
    }

    func testEraseWithAPasswordRemovesOnlyItemsWithThatPassword() {
        store(Self.https + ["username=alice", "password=shared"])
        store(Self.https + ["username=bob", "password=different"])
        store(Self.https + ["username=carol", "password=shared"])
        // A password that matches nothing erases nothing.
        erase(Self.https + ["username=bob", "password=wrong"])
        XCTAssertEqual(internetItems().count, 3)
        // Only the items whose password is the one given.
        erase(Self.https + ["password=shared"])
        let left = internetItems()
        XCTAssertEqual(left.map { $0["account"] as? String }, ["bob"])
        erase(Self.https + ["username=bob", "password=different"])
        XCTAssertEqual(internetItems().count, 0)
    }

    func testEraseMatchesTheHostAsGetDoes() {
        // The port is part of git's host: "example.com" and "example.com:8443" are two
        // hosts, for erase as for get (git's own helpers compare host strings).
        store(["protocol=https", "host=example.com:8443", "username=alice", "password=pw-8443"])
        store(["protocol=https", "host=example.com", "username=alice", "password=pw-default"])
        XCTAssertEqual(get(Self.https), ["username=alice", "password=pw-default"])
        erase(Self.https)
        XCTAssertEqual(get(["protocol=https", "host=example.com:8443"]), ["username=alice", "password=pw-8443"],
                       "erasing example.com also erased example.com:8443, which get does not match")
        XCTAssertEqual(get(Self.https), [])
    }

    /// Issue 11, defect 3: `printf '\n' | locket credential erase` emptied the
    /// keychain's internet passwords. An erase that names no host, protocol
    /// or path is refused (errSecParam on stderr, exit 0 as a helper must)
    /// and erases nothing, whatever else it names.
    func testEraseThatNamesNoHostProtocolOrPathIsRefused() {
        store(Self.https + ["username=alice", "password=pw-a"])
        store(["protocol=ssh", "host=other.example", "path=repo.git", "username=bob", "password=pw-b"])
        let requests: [(String, Input)] = [
            ("a blank line", .text("\n")),
            ("empty stdin", .devNull),
            ("a username alone", .text("username=alice\n\n")),
            ("a password alone", .text("password=pw-a\n\n")),
            ("empty host, protocol and path", .text("host=\nprotocol=\npath=\nusername=bob\n\n")),
            ("unknown keys only", .text("capability[]=authtype\nwwwauth[]=Basic\n\n")),
        ]
        for (what, input) in requests {
            let result = locket(["credential", "erase"], input: input)
            XCTAssertEqual(result.status, 0, "\(what): a helper exits 0: \(result.summary)")
            XCTAssertEqual(result.stdout, [], what)
            XCTAssertEqual(result.errLines.count, 1, "\(what): one line on stderr: \(result.summary)")
            XCTAssertTrue(result.err.hasPrefix("locket: error: "), "\(what): \(result.summary)")
            XCTAssertTrue(result.err.contains("(errSecParam -50)"), "\(what): \(result.summary)")
            XCTAssertEqual(internetItems().count, 2, "\(what) erased something")
        }
        // Naming any one of them is enough, and erases only what it names.
        erase(["path=repo.git"])
        XCTAssertEqual(internetItems().map { $0["account"] as? String }, ["alice"])
        erase(["protocol=https"])
        XCTAssertEqual(internetItems().count, 0)
    }

    // MARK: - Store updates

    func testStoreOnAnExistingItemUpdatesIt() throws {
        store(Self.https + ["username=alice", "password=old"])
        store(Self.https + ["username=alice", "password=new"])
        let items = internetItems()
        XCTAssertEqual(items.count, 1, "one item afterwards: \(items)")
        XCTAssertEqual(items.first?["data"] as? String, "new")
        XCTAssertEqual(get(Self.https), ["username=alice", "password=new"])
        // Storing the same again changes nothing either.
        store(Self.https + ["username=alice", "password=new"])
        XCTAssertEqual(internetItems().count, 1)
    }

    func testStoreWithoutPasswordOrHostStoresNothing() {
        store(Self.https + ["username=alice"])
        store(["protocol=https", "username=alice", "password=pw"])
        store(["host=example.com", "username=alice", "password=pw"])
        XCTAssertEqual(internetItems().count, 0)
    }

    // MARK: - Ignored input

    func testUnknownOperationsAreIgnored() {
        store(Self.https + ["username=alice", "password=pw"])
        for operation in ["frob", "list", "GET", ""] {
            let result = credential(operation, Self.https + ["username=alice", "password=other"])
            XCTAssertEqual(result.out, "", operation)
            XCTAssertEqual(result.err, "", operation)
        }
        XCTAssertEqual(get(Self.https), ["username=alice", "password=pw"], "nothing changed")
    }

    func testUnknownKeysAreIgnored() {
        store(Self.https + ["username=alice", "password=pw", "wwwauth[]=Basic realm=\"x\"", "capability[]=authtype",
                            "frobnicate=yes", "ephemeral=1"])
        XCTAssertEqual(get(Self.https + ["wwwauth[]=Basic realm=\"x\"", "unknown=key", "capability[]=authtype"]),
                       ["username=alice", "password=pw"])
        XCTAssertEqual(internetItems().count, 1)
        // A line that is no key=value is skipped, not an error.
        XCTAssertEqual(get(["garbage without equals", "protocol=https", "host=example.com"]), ["username=alice", "password=pw"])
    }

    // MARK: - Round trips

    func testEmptyUsernameAndPasswordRoundTrip() {
        store(Self.https + ["username=", "password="])
        XCTAssertEqual(get(Self.https), ["username=", "password="])
        XCTAssertEqual(get(Self.https + ["username="]), ["username=", "password="])
        XCTAssertEqual(internetItems().count, 1)
        // An empty username is a username: it does not match "alice", nor replace her.
        store(Self.https + ["username=alice", "password=pw"])
        XCTAssertEqual(internetItems().count, 2)
        XCTAssertEqual(get(Self.https + ["username=alice"]), ["username=alice", "password=pw"])
        XCTAssertEqual(get(Self.https + ["username="]), ["username=", "password="])
        erase(Self.https + ["username=", "password="])
        XCTAssertEqual(internetItems().map { $0["account"] as? String }, ["alice"])
    }

    func testPasswordExpiryAndRefreshTokenAreKept() {
        store(Self.https + ["username=alice", "password=pw", "password_expiry_utc=2147483640", "oauth_refresh_token=refresh-me"])
        let lines = get(Self.https)
        XCTAssertEqual(Array(lines.prefix(2)), ["username=alice", "password=pw"])
        XCTAssertEqual(Set(lines), ["username=alice", "password=pw", "password_expiry_utc=2147483640", "oauth_refresh_token=refresh-me"])
        XCTAssertEqual(lines.count, 4)
        // Kept with the secret, not in an attribute.
        let dump = locket(["--json", "dump"])
        XCTAssertFalse(dump.out.contains("refresh-me"), dump.out)
        // A store without them replaces them.
        store(Self.https + ["username=alice", "password=pw2"])
        XCTAssertEqual(get(Self.https), ["username=alice", "password=pw2"])
    }

    func testSecretsWithSpecialCharactersRoundTrip() {
        let password = "p=a s\tw ö€😀"
        store(Self.https + ["username=user@example.com", "password=\(password)"])
        XCTAssertEqual(get(Self.https), ["username=user@example.com", "password=\(password)"])
    }

    // MARK: - Errors never break git

    func testLockedKeychainPrintsOneHintAndExitsZero() {
        store(Self.https + ["username=alice", "password=pw"])
        ok("lock")
        let result = credential("get", Self.https)
        XCTAssertEqual(result.stdout, [], "nothing for git to use")
        XCTAssertEqual(result.errLines.count, 1, "exactly one hint line: \(result.err)")
        XCTAssertTrue(result.err.hasSuffix("\n"))
        XCTAssertTrue(result.err.contains("locket unlock"), result.err)
        XCTAssertFalse(result.err.contains("pw"), result.err)
        // store and erase are refused the same way, and change nothing.
        for operation in ["store", "erase"] {
            let other = credential(operation, Self.https + ["username=alice", "password=pw"])
            XCTAssertEqual(other.stdout, [], operation)
            XCTAssertEqual(other.errLines.count, 1, "\(operation): \(other.err)")
        }
        unlockForTest()
        XCTAssertEqual(get(Self.https), ["username=alice", "password=pw"])
    }

    func testNoKeychainPrintsOneHintAndExitsZero() {
        let result = Spawn.run(binary, ["credential", "get"], environment: sandbox.environment.merging(["LOCKET_KEYCHAIN": "absent"]) { $1 },
                               input: .text("protocol=https\nhost=example.com\n\n"), timeout: Self.timeout)
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertEqual(result.stdout, [])
        XCTAssertEqual(result.errLines.count, 1, result.err)
    }

    func testCredentialWithoutOperationIsAUsageError() {
        assertUsage(locket("credential"), mentions: ["credential"])
    }

    // MARK: - git-credential-locket

    /// A directory holding `git-credential-locket`, a symlink to the binary.
    func helperDirectory() throws -> String {
        try HelperLinks.directory(in: sandbox.root, linking: "git-credential-locket", to: binary)
    }

    func testBinaryNamedGitCredentialLocketActsAsCredential() throws {
        let helper = try helperDirectory() + "/git-credential-locket"
        let stored = credential("store", Self.https + ["username=alice", "password=via-link"], via: helper)
        XCTAssertEqual(stored.out + stored.err, "", stored.summary)
        XCTAssertEqual(get(Self.https), ["username=alice", "password=via-link"])
        let got = credential("get", Self.https, via: helper)
        XCTAssertEqual(got.out, "username=alice\npassword=via-link\n")
        XCTAssertEqual(got.err, "")
        let ignored = credential("frob", Self.https, via: helper)
        XCTAssertEqual(ignored.out + ignored.err, "")
        let erased = credential("erase", Self.https, via: helper)
        XCTAssertEqual(erased.out + erased.err, "", erased.summary)
        XCTAssertEqual(internetItems().count, 0)
    }

    /// `git -c credential.helper=locket credential OP` with the helper first in PATH and no user config.
    func git(_ arguments: [String], input: String, file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        let gitPath = try SystemTool.require("git", for: "the git credential round trip")
        let helpers = try helperDirectory()
        return runTool(gitPath, ["-c", "credential.helper=locket"] + arguments, input: .text(input),
                       environment: GitClient.environment(helpers: helpers), file: file, line: line)
    }

    func testGitCredentialFillApproveRejectRoundTrip() throws {
        let request = "protocol=https\nhost=git.example.com\npath=org/repo.git\n\n"
        let approve = try git(["credential", "approve"],
                              input: "protocol=https\nhost=git.example.com\nusername=alice\npassword=from-git\n\n")
        XCTAssertEqual(approve.status, 0, approve.summary)
        XCTAssertEqual(approve.err, "", approve.summary)
        XCTAssertEqual(internetItems().count, 1)
        XCTAssertEqual(internetItems().first?["data"] as? String, "from-git")

        let fill = try git(["credential", "fill"], input: "protocol=https\nhost=git.example.com\n\n")
        XCTAssertEqual(fill.status, 0, fill.summary)
        XCTAssertEqual(fill.out, "protocol=https\nhost=git.example.com\nusername=alice\npassword=from-git\n")
        XCTAssertEqual(fill.err, "")
        // git sends no path unless credential.useHttpPath: the path in the request plays no part then.
        XCTAssertTrue(try git(["credential", "fill"], input: request).out.contains("password=from-git\n"))

        // Approving a new password for the same user updates the item.
        _ = try git(["credential", "approve"], input: "protocol=https\nhost=git.example.com\nusername=alice\npassword=rotated\n\n")
        XCTAssertEqual(internetItems().count, 1)
        XCTAssertTrue(try git(["credential", "fill"], input: request).out.contains("password=rotated\n"))

        // Rejecting an old password leaves the current one; rejecting the current one erases it.
        _ = try git(["credential", "reject"], input: "protocol=https\nhost=git.example.com\nusername=alice\npassword=from-git\n\n")
        XCTAssertEqual(internetItems().count, 1)
        let reject = try git(["credential", "reject"], input: "protocol=https\nhost=git.example.com\nusername=alice\npassword=rotated\n\n")
        XCTAssertEqual(reject.status, 0, reject.summary)
        XCTAssertEqual(reject.err, "", reject.summary)
        XCTAssertEqual(internetItems().count, 0)
        // Now git has nothing, and may not prompt: fill fails.
        let empty = try git(["credential", "fill"], input: "protocol=https\nhost=git.example.com\n\n")
        XCTAssertNotEqual(empty.status, 0, empty.summary)
        XCTAssertFalse(empty.out.contains("password="), empty.out)
    }

    func testGitHelperWithOptions() throws {
        // credential.helper = "locket -k work": git runs `git-credential-locket -k work get`.
        ok("-k", "work", "init", "--no-password")
        let approve = try git(["-c", "credential.helper=", "-c", "credential.helper=locket -k work", "credential", "approve"],
                              input: "protocol=https\nhost=work.example\nusername=w\npassword=work-pw\n\n")
        XCTAssertEqual(approve.status, 0, approve.summary)
        XCTAssertEqual(approve.err, "", approve.summary)
        XCTAssertEqual(internetItems().count, 0, "not in the login keychain")
        XCTAssertEqual(locket(["-k", "work", "find", "--class", "inet", "-s", "work.example", "-w"]).out, "work-pw\n")
        let fill = try git(["-c", "credential.helper=", "-c", "credential.helper=locket -k work", "credential", "fill"],
                           input: "protocol=https\nhost=work.example\n\n")
        XCTAssertEqual(fill.out, "protocol=https\nhost=work.example\nusername=w\npassword=work-pw\n", fill.summary)
    }

    func testMakeInstallLinksGitCredentialLocket() throws {
        // `git config credential.helper locket` needs git-credential-locket in PATH: make install puts it there.
        let make = try SystemTool.require("make", for: "checking the install rule")
        let destination = sandbox.root + "/destdir"
        let result = runTool(make, ["-n", "-C", LocketBinary.repositoryRoot, "install", "DESTDIR=\(destination)", "PREFIX=/usr"],
                             environment: ["MAKEFLAGS": ""])
        XCTAssertEqual(result.status, 0, result.summary)
        let lines = result.out.split(separator: "\n").filter { $0.contains("git-credential-locket") }
        XCTAssertFalse(lines.isEmpty, "make install does not install git-credential-locket:\n\(result.out)")
        XCTAssertTrue(lines.contains { $0.contains("ln ") && $0.contains("\(destination)/usr/bin/git-credential-locket") },
                      "git-credential-locket is a link to locket in BINDIR:\n\(lines.joined(separator: "\n"))")
        let uninstall = runTool(make, ["-n", "-C", LocketBinary.repositoryRoot, "uninstall", "DESTDIR=\(destination)", "PREFIX=/usr"])
        XCTAssertTrue(uninstall.out.contains("\(destination)/usr/bin/git-credential-locket"),
                      "make uninstall removes the link too:\n\(uninstall.out)")
    }

    func testGitFillWithALockedKeychainFallsThrough() throws {
        _ = try git(["credential", "approve"], input: "protocol=https\nhost=git.example.com\nusername=alice\npassword=pw\n\n")
        ok("lock")
        let fill = try git(["credential", "fill"], input: "protocol=https\nhost=git.example.com\n\n")
        XCTAssertNotEqual(fill.status, 0, "no prompt allowed, so git fails: \(fill.summary)")
        XCTAssertTrue(fill.err.contains("locket unlock"), "the hint reaches the user: \(fill.err)")
        XCTAssertFalse(fill.out.contains("password=pw"))
    }
}
