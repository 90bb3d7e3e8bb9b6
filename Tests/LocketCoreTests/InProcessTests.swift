import Foundation
import LocketCore
import XCTest

/// What a caller that keeps a keychain open between calls relies on
/// (`Keychain+InProcess`, the Security module): the session's fingerprint
/// changes exactly when another object locks, unlocks or scopes it, in both
/// session backends; a held search answers again as the file would, and
/// fails as a fresh search would when a class was locked since.
final class InProcessTests: XCTestCase {
    private var made: [TemporaryKeychain] = []

    override func tearDown() {
        for keychain in made.reversed() { keychain.remove() }
        made = []
    }

    private func keychain(_ session: String) throws -> TemporaryKeychain {
        do {
            let keychain = try TemporaryKeychain(session: session)
            made.append(keychain)
            return keychain
        } catch let error as KeychainError where error.code == .io && session == "keyring" {
            throw XCTSkip("the kernel keyring is not available here: \(error)")
        }
    }

    private func checkTheFingerprintFollowsTheSession(_ session: String) throws {
        let temporary = try keychain(session)
        let kept = try temporary.open()
        let probe = SessionProbe()
        let unlocked = kept.session.sessionFingerprint(extend: false, probe: probe)
        XCTAssertEqual(kept.session.sessionFingerprint(extend: true, probe: probe), unlocked, "a use is no change")
        XCTAssertEqual(kept.session.sessionFingerprint(extend: false, probe: probe), unlocked)
        try temporary.lock(all: false)
        let locked = kept.session.sessionFingerprint(extend: false, probe: probe)
        XCTAssertNotEqual(locked, unlocked)
        try temporary.lock(all: true)
        XCTAssertNotEqual(kept.session.sessionFingerprint(extend: false, probe: probe), locked)
        try temporary.unlock()
        // A new unlock holds new keys (the presence reuse nonce is new at every unlock).
        let again = kept.session.sessionFingerprint(extend: false, probe: probe)
        XCTAssertNotEqual(again, locked)
        XCTAssertEqual(kept.session.sessionFingerprint(extend: false, probe: SessionProbe()), again, "found again without the probe's memory")
    }

    func testTheFingerprintFollowsADirectorySession() throws { try checkTheFingerprintFollowsTheSession("dir") }
    func testTheFingerprintFollowsAKeyringSession() throws { try checkTheFingerprintFollowsTheSession("keyring") }

    /// An app's scoped session holds a key per (class, group): more than a
    /// pooled slot holds with a few groups, read whole all the same.
    func testALargeScopedSessionLoads() throws {
        let temporary = try keychain("keyring")
        let groups = (0..<12).map { "T.group-with-a-long-name-\($0)" }
        let entitlements = try Entitlements.parse(Array(#"{"keychain-access-groups": [\#(groups.map { "\"\($0)\"" }.joined(separator: ","))]}"#.utf8),
                                                  name: "app.json")
        try temporary.open().add(genp("svc", "last", group: groups.last), data: secret("in the last group"))
        try temporary.lock(all: true)
        try temporary.open(caller: .app(entitlements)).session.unlock(password: secret(temporary.password!), timeout: nil)
        let found = try temporary.open(caller: .app(entitlements)).search(query(.genericPassword, [.account: "last"]), returnData: true)
        XCTAssertEqual(found.first?.secretString, "in the last group")
    }

    func testAHeldSearchAnswersAgainAndFailsOnceLocked() throws {
        let temporary = try keychain("dir")
        try temporary.open().add(genp("svc", "a"), data: secret("one"))
        let kept = try temporary.open()
        let (items, held) = try kept.searchHolding(query(.genericPassword, [.service: "svc"]), limit: .all, returnData: true)
        XCTAssertEqual(items.map { $0.secretString }, ["one"])
        let search = try XCTUnwrap(held)
        XCTAssertGreaterThan(search.byteCount, 0)
        XCTAssertEqual(try kept.searchAgain(search).map { $0.secretString }, ["one"])
        let (none, missed) = try kept.searchHolding(query(.genericPassword, [.service: "other"]), returnData: true)
        XCTAssertEqual(none.count, 0, "a miss is held too")
        XCTAssertEqual(try kept.searchAgain(try XCTUnwrap(missed)).count, 0)
        try temporary.lock(all: false)
        _ = try kept.session.reloadSession(extend: false, probe: SessionProbe())
        XCTAssertKeychainError(.interactionNotAllowed, try kept.searchAgain(search))
        // A key's value is refused before it is opened: never held.
        XCTAssertNil(try kept.searchHolding(Query(itemClass: .key), returnData: true).held)
    }
}
