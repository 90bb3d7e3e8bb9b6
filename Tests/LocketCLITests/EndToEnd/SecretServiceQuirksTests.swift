import XCTest

/// What real clients do where the Secret Service API is silent, answered as
/// gnome-keyring answers (issue 41; Tests/Fixtures/secret-service/quirks.py).
final class SecretServiceQuirksTests: SecretServiceCase {
    /// Chromium's Unlock of the collection, then Item.GetSecret without an Unlock of the item.
    func testUnlockOfTheCollectionThenItemGetSecret() throws { try runCase("quirks.py", "unlock_then_item_get_secret") }

    /// /aliases/default, /aliases/login, /collection/login, /aliases/session, /collection/session.
    func testAliasAndCollectionPaths() throws { try runCase("quirks.py", "alias_and_collection_paths") }

    /// secret-tool store --collection=session and --collection=login.
    func testSessionCollection() throws { try runCase("quirks.py", "session_collection", needs: ["secret-tool"]) }

    /// keyring-rs's calls, in its order.
    func testKeyringRsSequence() throws { try runCase("quirks.py", "keyring_rs_sequence") }

    /// The same calls to gnome-keyring-daemon and to locket: the same answers but for
    /// the differences docs/SECRET-SERVICE.md lists, which are as listed.
    func testSameAnswersAsGnomeKeyring() throws { try runCase("gnome_keyring.py", "same_answers", needs: ["gnome-keyring-daemon"]) }
}
