import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 36, point 1: `secret-service enable | disable | status` on the
/// files alone, in-process (the bus's side, with activation for real, is
/// SecretServiceSessionActivationTests). gnome-keyring's autostart entry is
/// one of the sandbox's own (XDG_CONFIG_DIRS), so the overrides written
/// do not depend on what this machine has installed.
final class SecretServiceSwitchTests: EndToEndCase {
    override class var inProcess: Bool { true }

    var dbusFile: String { sandbox.dataHome + "/dbus-1/services/org.freedesktop.secrets.service" }
    var unitFile: String { sandbox.home + "/.config/systemd/user/locket-secret-service.service" }
    var autostartFile: String { sandbox.home + "/.config/autostart/gnome-keyring-secrets.desktop" }
    var stateDirectory: String { sandbox.stateHome + "/locket/secret-service" }
    let marker = "# Written by `locket secret-service enable`; `locket secret-service disable` puts back what was here.\n"

    var environment: [String: String] {
        ["XDG_CONFIG_DIRS": sandbox.root + "/xdg", "XDG_DATA_DIRS": sandbox.root + "/share"]
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        for directory in ["/xdg", "/xdg/autostart", "/share"] { XCTAssertEqual(mkdir(sandbox.root + directory, 0o755), 0) }
        writeFile(sandbox.root + "/xdg/autostart/gnome-keyring-secrets.desktop", "[Desktop Entry]\nExec=gnome-keyring-daemon --start --components=secrets\n")
    }

    func status() throws -> [String: Any] {
        try locket(["--json", "secret-service", "status"], environment: environment).jsonObject()
    }

    func testEnableRefusesAFileNotLocketsAndDisablePutsItBack() throws {
        let foreign = "[D-BUS Service]\nName=org.freedesktop.secrets\nExec=/usr/bin/gnome-keyring-daemon --start --foreground --components=secrets\n"
        XCTAssertNoThrow(try FileManager.default.createDirectory(atPath: sandbox.dataHome + "/dbus-1/services", withIntermediateDirectories: true))
        writeFile(dbusFile, foreign, mode: 0o640)
        chmod(dbusFile, 0o640)
        XCTAssertEqual(try status()["enabled"] as? Bool, false)

        let refused = expect(45, "secret-service", "enable", environment: environment)
        assertError(refused, "errSecDuplicateItem", -25299)
        XCTAssertTrue(refused.err.contains("\(dbusFile) is already there and is not locket's"), refused.err)
        XCTAssertTrue(refused.err.contains("locket: hint: 'locket secret-service enable --force' sets it aside"), refused.err)
        XCTAssertEqual(readText(dbusFile), foreign, "a refused enable changed the file")
        XCTAssertFalse(fileExists(unitFile), "a refused enable wrote the unit")
        XCTAssertFalse(fileExists(autostartFile), "a refused enable wrote the autostart entry")

        let forced = ok("secret-service", "enable", "--force", environment: environment)
        XCTAssertTrue(forced.out.contains("set aside \(dbusFile) (disable puts it back)"), forced.out)
        for path in [dbusFile, unitFile, autostartFile] {
            XCTAssertTrue(readText(path)?.hasPrefix(marker) == true, "\(path) is not locket's: \(readText(path) ?? "missing")")
        }
        XCTAssertTrue(readText(autostartFile)?.contains("Hidden=true") == true)
        let enabled = try status()
        XCTAssertEqual(enabled["enabled"] as? Bool, true)
        XCTAssertEqual((enabled["activation"] as? [String: Any])?["locket"] as? Bool, true)
        XCTAssertEqual((enabled["activation"] as? [String: Any])?["file"] as? String, dbusFile)

        // Twice is fine: locket's own files are written again, the original stays set aside once.
        ok("secret-service", "enable", environment: environment)

        let disabled = ok("secret-service", "disable", environment: environment)
        XCTAssertTrue(disabled.out.contains("put back \(dbusFile)"), disabled.out)
        XCTAssertEqual(readText(dbusFile), foreign, "disable did not put back the original")
        XCTAssertEqual(mode(dbusFile), 0o640, "disable did not keep the original's mode")
        XCTAssertFalse(fileExists(unitFile) || fileExists(autostartFile), "disable left locket's files")
        XCTAssertFalse(fileExists(stateDirectory), "disable left its record")
        XCTAssertEqual(try status()["enabled"] as? Bool, false)
        let again = ok("secret-service", "disable", environment: environment)
        XCTAssertTrue(again.out.contains("nothing to change"), again.out)
    }

    func testALinkIsPutBackAsALinkAndAFileChangedSinceIsLeftAlone() {
        XCTAssertNoThrow(try FileManager.default.createDirectory(atPath: sandbox.home + "/.config/systemd/user", withIntermediateDirectories: true))
        XCTAssertEqual(symlink("/dev/null", unitFile), 0, "a masked unit")
        expect(45, "secret-service", "enable", environment: environment)
        ok("secret-service", "enable", "--force", environment: environment)
        XCTAssertTrue(readText(unitFile)?.hasPrefix(marker) == true)
        ok("secret-service", "disable", environment: environment)
        XCTAssertEqual(try? FileManager.default.destinationOfSymbolicLink(atPath: unitFile), "/dev/null", "the masked unit was not put back as a link")

        // The link back in place is refused again without --force.
        expect(45, "secret-service", "enable", environment: environment)
        unlink(unitFile)
        ok("secret-service", "enable", environment: environment)
        writeFile(dbusFile, "[D-BUS Service]\nName=org.freedesktop.secrets\nExec=/opt/mine\n")
        let disabled = locket(["secret-service", "disable"], environment: environment)
        XCTAssertEqual(disabled.status, 0, disabled.summary)
        XCTAssertTrue(disabled.err.contains("locket: warning: left \(dbusFile) as it is"), disabled.err)
        XCTAssertEqual(readText(dbusFile), "[D-BUS Service]\nName=org.freedesktop.secrets\nExec=/opt/mine\n")
        XCTAssertFalse(fileExists(autostartFile))

        // That file is now what a forced enable sets aside and disable puts back.
        expect(45, "secret-service", "enable", environment: environment)
        ok("secret-service", "enable", "-f", environment: environment)
        ok("secret-service", "disable", environment: environment)
        XCTAssertEqual(readText(dbusFile), "[D-BUS Service]\nName=org.freedesktop.secrets\nExec=/opt/mine\n")
        XCTAssertFalse(fileExists(stateDirectory), "disable left its record")
    }

    /// A file that replaced locket's after a forced enable takes the place of the original set aside then.
    func testTheLatestFileIsWhatDisablePutsBack() {
        XCTAssertNoThrow(try FileManager.default.createDirectory(atPath: sandbox.dataHome + "/dbus-1/services", withIntermediateDirectories: true))
        writeFile(dbusFile, "original\n")
        ok("secret-service", "enable", "--force", environment: environment)
        writeFile(dbusFile, "edited since\n")
        ok("secret-service", "enable", "--force", environment: environment)
        XCTAssertTrue(readText(dbusFile)?.hasPrefix(marker) == true)
        ok("secret-service", "disable", environment: environment)
        XCTAssertEqual(readText(dbusFile), "edited since\n")
        XCTAssertFalse(fileExists(stateDirectory), "the superseded original was left in \(stateDirectory)")
    }

    /// The provider the files start is this locket with enable's -k and --app, quoted for D-Bus and for systemd.
    func testEnableWritesTheProvidersCommandLine() throws {
        let keychain = sandbox.dataHome + "/locket/my 100% $HOME.keychain"
        let entitlements = sandbox.root + "/gh.entitlements"
        writeFile(entitlements, #"{"keychain-access-groups": ["gh"]}"#)
        ok("secret-service", "enable", "-k", keychain, "--app", "/bin/sh=" + entitlements, environment: environment)
        let executable = try XCTUnwrap(try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        let dbus = try XCTUnwrap(readText(dbusFile))
        XCTAssertTrue(dbus.contains("\nExec=\(executable) secret-service -k '\(keychain)' --app /usr/bin/dash=\(entitlements)\n")
                          || dbus.contains("\nExec=\(executable) secret-service -k '\(keychain)' --app /bin/dash=\(entitlements)\n"), dbus)
        XCTAssertTrue(dbus.contains("\nSystemdService=locket-secret-service.service\n"), dbus)
        let unit = try XCTUnwrap(readText(unitFile))
        let quoted = "\"" + keychain.replacingOccurrences(of: "%", with: "%%").replacingOccurrences(of: "$", with: "$$") + "\""
        XCTAssertTrue(unit.contains("\nExecStart=\(executable) secret-service -k \(quoted) --app "), unit)
        for line in ["Type=dbus", "BusName=org.freedesktop.secrets"] { XCTAssertTrue(unit.contains("\n\(line)\n"), unit) }
    }

    /// Issue 41: on a desktop whose portal configuration picks another
    /// Secret backend (KDE's KWallet here), enable writes the user's
    /// DESKTOP-portals.conf: the desktop's file with the Secret line set to
    /// locket, everything else kept; disable removes it. With no desktop
    /// named, nothing (a portals.conf for no desktop would replace every one's).
    func testSecretPortalChoiceForTheDesktop() throws {
        let portalFile = sandbox.home + "/.config/xdg-desktop-portal/kde-portals.conf"
        XCTAssertNoThrow(try FileManager.default.createDirectory(atPath: sandbox.root + "/share/xdg-desktop-portal/portals",
                                                                  withIntermediateDirectories: true))
        let kde = "[preferred]\ndefault=kde\norg.freedesktop.impl.portal.Secret=kwallet\norg.freedesktop.impl.portal.FileChooser=kde\n"
        writeFile(sandbox.root + "/share/xdg-desktop-portal/kde-portals.conf", kde)
        ok("secret-service", "enable", environment: environment)
        XCTAssertFalse(fileExists(portalFile), "enable outside a desktop wrote a portal configuration")
        ok("secret-service", "disable", environment: environment)

        var desktop = environment
        desktop["XDG_CURRENT_DESKTOP"] = "KDE"
        ok("secret-service", "enable", environment: desktop)
        XCTAssertEqual(readText(portalFile), marker + "[preferred]\ndefault=kde\norg.freedesktop.impl.portal.Secret=locket;gnome-keyring\n"
                       + "org.freedesktop.impl.portal.FileChooser=kde\n")
        let status = try locket(["--json", "secret-service", "status"], environment: desktop).jsonObject()
        let files = (status["files"] as? [[String: Any]]) ?? []
        XCTAssertTrue(files.contains { $0["path"] as? String == portalFile && $0["state"] as? String == "locket" }, "\(files)")
        // Again: the desktop's file is read again, not locket's own.
        ok("secret-service", "enable", environment: desktop)
        XCTAssertEqual(readText(portalFile)?.components(separatedBy: "Secret=").count, 2, readText(portalFile) ?? "")
        ok("secret-service", "disable", environment: desktop)
        XCTAssertFalse(fileExists(portalFile), "disable left the portal configuration")

        // A desktop with no configuration at all: a [preferred] group with the Secret line alone.
        desktop["XDG_CURRENT_DESKTOP"] = "sway"
        ok("secret-service", "enable", environment: desktop)
        XCTAssertEqual(readText(sandbox.home + "/.config/xdg-desktop-portal/sway-portals.conf"),
                       marker + "[preferred]\norg.freedesktop.impl.portal.Secret=locket;gnome-keyring\n")
        ok("secret-service", "disable", environment: desktop)
    }

    func testUsageErrors() {
        for arguments in [["secret-service", "enable", "extra"], ["secret-service", "disable", "--force"], ["secret-service", "status", "-k", "x"],
                          ["secret-service", "--force"], ["secret-service", "enable", "--replace"], ["-k", "work", "secret-service", "status"],
                          ["pam"], ["pam", "frob"], ["pam", "lock", "--timeout", "5"], ["pam", "unlock", "--timeout", "soon"],
                          ["settings", "--lock-on-sleep", "maybe"]] {
            assertUsage(locket(arguments, environment: environment))
        }
        assertError(expect(206, "pam", "unlock", input: .devNull), "errSecParam", -50)
    }

    func testSettingsLockEvents() throws {
        initKeychain()
        let defaults = try locket("--json", "settings").jsonObject()
        XCTAssertEqual(defaults["lockOnSleep"] as? Bool, true)
        XCTAssertEqual(defaults["lockOnScreenLock"] as? Bool, true)
        ok("settings", "--lock-on-sleep", "no")
        let changed = try locket("--json", "settings").jsonObject()
        XCTAssertEqual(changed["lockOnSleep"] as? Bool, false)
        XCTAssertEqual(changed["lockOnScreenLock"] as? Bool, true)
        XCTAssertEqual(ok("settings").out, "timeout: 300\nlock-on-sleep: no\n")
        ok("settings", "--lock-on-sleep", "yes", "--lock-on-screen-lock", "no")
        let swapped = try locket("--json", "settings").jsonObject()
        XCTAssertEqual(swapped["lockOnSleep"] as? Bool, true)
        XCTAssertEqual(swapped["lockOnScreenLock"] as? Bool, false)
    }
}
