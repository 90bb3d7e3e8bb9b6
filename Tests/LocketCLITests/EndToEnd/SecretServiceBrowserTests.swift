import XCTest

/// Browsers and sandboxed apps (SPEC §20, issue 41): Debian's chromium
/// keeping its Safe Storage key in locket, and xdg-desktop-portal's secret
/// portal served by locket's backend (Tests/Fixtures/secret-service/chromium.py, portal.py).
final class SecretServiceBrowserTests: SecretServiceCase {
    /// A cookie written in one run is read in the next (v11: the key came from the keyring);
    /// locked, the key comes through a prompt; locked with nothing to ask, Chromium is not held up.
    func testChromiumSafeStorage() throws { try runCase("chromium.py", "safe_storage_end_to_end", timeout: 400) }

    /// Two Flatpak apps (bwrap with a /.flatpak-info) through xdg-desktop-portal: each its own
    /// 64-byte secret, the same every time; a host process refused; locked: a prompt, or `cancelled`.
    func testSecretPortalThroughXdgDesktopPortal() throws { try runCase("portal.py", "through_xdg_desktop_portal", timeout: 300) }

    /// The backend's interface called directly, for what the portal never sends; a request
    /// without a handle token answered 0.25 s late; a program limited by --app refused.
    func testSecretPortalBackendDirectly() throws { try runCase("portal.py", "impl_direct") }

    /// libsecret (secret-tool) in a Flatpak sandbox (bwrap, xdg-dbus-proxy): its items in the app's
    /// own file, sealed with the app's secret from locket; another app can't read them; locked: no hang.
    func testLibsecretInAFlatpak() throws { try runCase("flatpak.py", "libsecret_in_a_flatpak", needs: ["secret-tool"]) }

    /// Chromium in a Flatpak sandbox: its cookie sealed with the portal's per-app key (v12) from locket;
    /// locked: read back through a prompt, or cancelled at once.
    func testChromiumInAFlatpak() throws { try runCase("flatpak.py", "chromium_in_a_flatpak", timeout: 300) }
}
