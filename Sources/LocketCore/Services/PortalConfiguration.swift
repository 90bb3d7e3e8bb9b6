import Glibc
import LocketSupport

/// xdg-desktop-portal's choice of the secret portal's backend (issue 41), for
/// the switch's `secret-portal` component.
///
/// locket's backend answers on org.freedesktop.secrets, as gnome-keyring's
/// does (`locket.portal`, installed beside gnome-keyring's in
/// `share/xdg-desktop-portal/portals`, names that bus name): wherever the
/// portal picks either, whoever owns the name answers, so `enable` alone
/// gives the portal to locket there. A desktop whose configuration picks
/// another backend (KWallet's, oo7's) needs portals.conf(5) (xdg-desktop-portal
/// 1.17 and later) to say `org.freedesktop.impl.portal.Secret=locket`.
///
/// xdg-desktop-portal reads one configuration file, the first it finds
/// (`$XDG_CONFIG_HOME/xdg-desktop-portal` first, then the system's, each
/// directory's `DESKTOP-portals.conf` before its `portals.conf`), so the
/// user's file must carry everything the desktop's own file said. The
/// component writes `$XDG_CONFIG_HOME/xdg-desktop-portal/DESKTOP-portals.conf`
/// for the desktop `enable` runs in: the file the portal reads now, with the
/// Secret line set to `locket;gnome-keyring` (the second for a machine
/// whose `locket.portal` is not in the portal's own directory: gnome-keyring's
/// names the same bus name). Written only where xdg-desktop-portal is
/// installed and a desktop is named: a `portals.conf` for no desktop would
/// replace every desktop's own file.
public enum PortalConfiguration {
    /// The interface whose backend the file chooses.
    public static let secretInterface = "org.freedesktop.impl.portal.Secret"
    /// The portals it names, in order: locket's, then gnome-keyring's (the same bus name).
    public static let choice = "locket;gnome-keyring"

    /// The desktops of `XDG_CURRENT_DESKTOP`, lowercased, as the portal matches them.
    static func desktops(_ value: String?) -> [String] {
        (value ?? "").split(separator: ":").map { String($0).lowercased() }.filter { !$0.isEmpty && !$0.contains("/") }
    }

    /// Whether xdg-desktop-portal is on this machine: its executable, or a portals directory of its.
    static func installed(_ paths: ProviderActivation.Paths) -> Bool {
        if FileIO.exists("/usr/libexec/xdg-desktop-portal") { return true }
        return (paths.dataDirectories + ["/usr/share"]).contains { FileIO.exists($0 + "/xdg-desktop-portal/portals") }
    }

    /// The directories xdg-desktop-portal reads portals.conf from, in its order.
    static func directories(_ paths: ProviderActivation.Paths) -> [String] {
        var directories = [paths.configHome]
        directories += paths.configDirectories
        directories.append("/etc")
        directories.append(paths.dataHome)
        directories += paths.dataDirectories
        directories.append("/usr/share")
        var seen = Set<String>()
        return directories.map { $0 + "/xdg-desktop-portal" }.filter { seen.insert($0).inserted }
    }

    /// The file the user's choice is written to, for the first of `desktops`.
    static func userFile(_ paths: ProviderActivation.Paths, desktop: String) -> String {
        paths.configHome + "/xdg-desktop-portal/\(desktop)-portals.conf"
    }

    /// The configuration the portal reads for `desktops` when locket's file
    /// is not there: the first file that exists in its order (locket's own skipped).
    static func current(_ paths: ProviderActivation.Paths, desktops: [String]) -> String? {
        for directory in directories(paths) {
            for name in desktops.map({ "\($0)-portals.conf" }) + ["portals.conf"] {
                let path = directory + "/" + name
                guard ProviderActivation.state(of: path) != .locket, let bytes = try? FileIO.readSmall(path, limit: 1 << 16) else { continue }
                return String(decoding: bytes, as: UTF8.self)
            }
        }
        return nil
    }

    /// `text` (a portals.conf, or nothing) with the Secret interface's line in
    /// `[preferred]` set to `choice`, every other line as it was.
    static func choosingLocket(in text: String?) -> String {
        var lines = (text ?? "").split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        let entry = "\(secretInterface)=\(choice)"
        var group: String?
        var kept: [String] = []
        var replaced = false
        for line in lines {
            let trimmed = line.trimmingBlanks()
            if trimmed.hasPrefix("[") { group = trimmed }
            if group == "[preferred]", let equals = trimmed.firstIndex(of: "="), String(trimmed[..<equals]).trimmingBlanks() == secretInterface {
                // The first such line becomes locket's; a repeated one goes (the portal would take the last).
                if !replaced { kept.append(entry) }
                replaced = true
                continue
            }
            kept.append(line)
        }
        if !replaced {
            if let header = kept.firstIndex(where: { $0.trimmingBlanks() == "[preferred]" }) {
                kept.insert(entry, at: header + 1)
            } else {
                if !kept.isEmpty { kept.append("") }
                kept += ["[preferred]", entry]
            }
        }
        return kept.joined(separator: "\n") + "\n"
    }
}
