import XCTest

/// The real clients of SPEC §18 against `locket secret-service`, each on a
/// private bus its case starts (Tests/Fixtures/secret-service/clients.py).
final class SecretServiceClientsEndToEndTests: SecretServiceCase {
    /// secretstorage_client's and python keyring's (clients.py KEYRING).
    override class var clientModules: [String] { ["secretstorage", "keyring", "keyring.cli", "keyring.backends.SecretService"] }

    /// store, lookup, search --all, clear; binary secrets; items visible both ways; nothing in the clear.
    func testSecretTool() throws { try runCase("clients.py", "secret_tool", needs: ["secret-tool"]) }

    /// secret-tool store and python keyring set with username '' replace the item; the empty value is returned and matched.
    func testEmptyAttributeValuesAreValues() throws { try runCase("clients.py", "empty_attribute_values", needs: ["secret-tool"]) }

    /// secretstorage's DH session, a binary secret, its content type.
    func testSecretStorage() throws { try runCase("clients.py", "secretstorage_client") }

    /// secretstorage's own test suite, from its source distribution (pip, cached in .build).
    func testSecretStorageOwnTestSuite() throws { try runCase("clients.py", "secretstorage_suite") }

    /// python keyring set/get/del with nothing configured, and its SecretService backend by name.
    func testPythonKeyring() throws { try runCase("clients.py", "python_keyring") }

    /// docker-credential-secretservice store/get/list/erase.
    func testDockerCredentialSecretService() throws {
        try runCase("clients.py", "docker_credentials", needs: ["docker-credential-secretservice"])
    }

    /// git's libsecret credential helper, built from the sources Debian's git ships.
    func testGitCredentialLibsecret() throws { try runCase("clients.py", "git_libsecret", needs: ["cc", "pkg-config"]) }

    /// secret-tool's items and locket: add -U leaves them alone, update --set-attr/--remove-attr edits
    /// them, and export + import into a fresh keychain keeps what secret-tool finds them by.
    func testBusItemsInUpdatesAndBackups() throws {
        try runCase("clients.py", "bus_items_in_updates_and_backups", needs: ["secret-tool"])
    }

    /// A client of the plain algorithm: the secret crosses as it is.
    func testPlainSession() throws { try runCase("clients.py", "plain_session") }
}
