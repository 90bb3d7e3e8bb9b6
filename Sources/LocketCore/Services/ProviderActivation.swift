import Glibc
import LocketSupport

/// `locket secret-service enable | disable | status` (SPEC §20): the files
/// that make locket the Secret Service of this user's sessions, all under
/// the user's own directories, where they take precedence over the
/// system-wide ones (gnome-keyring's).
///
/// Each part of the switch is a `Component` that names its files; `enable`
/// writes every component's, `disable` puts back what each replaced. A file
/// is locket's when it carries `marker`; one that is not is never
/// overwritten without `force`, and then it is set aside (`ActivationRecord`)
/// to be put back by `disable`. The secret portal's choice (issue 41) is
/// one more component.
public struct ProviderActivation: Sendable {
    /// The line every file `enable` writes starts with: how locket knows its own.
    public static let marker = "# Written by `locket secret-service enable`; `locket secret-service disable` puts back what was here."
    /// The D-Bus name the switch is about.
    public static let busName = "org.freedesktop.secrets"
    /// The systemd user unit that runs the provider (the D-Bus file's `SystemdService=`).
    public static let unitName = "locket-secret-service.service"

    /// One file of the switch.
    public struct File: Sendable, Equatable {
        public let path: String
        /// What it is for, as `status` says it.
        public let purpose: String
        public let contents: String
    }

    /// A part of the switch: the files it writes for the provider's command line.
    public struct Component: Sendable {
        public let name: String
        let files: @Sendable (_ paths: Paths, _ command: [String]) -> [File]
    }

    /// The directories the switch reads and writes, from the environment.
    public struct Paths: Sendable {
        public let dataHome: String
        public let configHome: String
        /// Where the record of what `enable` set aside lives (`$XDG_STATE_HOME/locket/secret-service`).
        public let state: String
        public let runtimeDirectory: String?
        /// `$XDG_DATA_DIRS` (default /usr/local/share:/usr/share): the system-wide D-Bus service directories.
        public let dataDirectories: [String]
        /// `$XDG_CONFIG_DIRS` (default /etc/xdg): the system-wide autostart entries.
        public let configDirectories: [String]
        /// `$XDG_CURRENT_DESKTOP`, lowercased: the desktop whose portal configuration the switch edits.
        public let desktops: [String]

        public init(environment: Environment) throws {
            guard let home = try environment["HOME"], home.hasPrefix("/") else {
                throw KeychainError(.param, "HOME is not set to an absolute path")
            }
            func absolute(_ name: String) throws -> String? { try environment[name].flatMap { $0.hasPrefix("/") ? $0 : nil } }
            func list(_ name: String, _ fallback: [String]) throws -> [String] {
                let given = try environment[name].map { $0.split(separator: ":").map(String.init).filter { $0.hasPrefix("/") } } ?? []
                return given.isEmpty ? fallback : given
            }
            dataHome = try absolute("XDG_DATA_HOME") ?? home + "/.local/share"
            configHome = try absolute("XDG_CONFIG_HOME") ?? home + "/.config"
            state = try environment.stateDirectory() + "/locket/secret-service"
            runtimeDirectory = try absolute("XDG_RUNTIME_DIR")
            dataDirectories = try list("XDG_DATA_DIRS", ["/usr/local/share", "/usr/share"])
            configDirectories = try list("XDG_CONFIG_DIRS", ["/etc/xdg"])
            desktops = PortalConfiguration.desktops(try environment["XDG_CURRENT_DESKTOP"])
        }

        /// The session bus's service directories in the order it searches them
        /// (dbus-daemon's `<standard_session_servicedirs/>`): the first file
        /// that names a bus name wins.
        public var sessionServiceDirectories: [String] {
            var directories = runtimeDirectory.map { [$0 + "/dbus-1/services"] } ?? []
            directories.append(dataHome + "/dbus-1/services")
            for directory in dataDirectories + ["/usr/share"] where !directories.contains(directory + "/dbus-1/services") {
                directories.append(directory + "/dbus-1/services")
            }
            return directories
        }

        /// The systemd user manager's system-wide unit directories, in its order.
        public var systemUnitDirectories: [String] {
            ["/etc/systemd/user", "/usr/local/lib/systemd/user", "/usr/local/share/systemd/user", "/usr/lib/systemd/user", "/usr/share/systemd/user"]
        }
    }

    public let paths: Paths
    public let components: [Component]

    public init(environment: Environment, components: [Component] = ProviderActivation.standardComponents) throws {
        paths = try Paths(environment: environment)
        self.components = components
    }

    /// What `enable` writes, for the provider started as `command` (locket's path and its arguments).
    public func files(command: [String]) -> [File] {
        components.flatMap { $0.files(paths, command) }
    }

    // MARK: - What is there

    /// What is at one of the switch's paths.
    public enum FileState: Sendable, Equatable {
        case absent
        /// A file carrying `marker`.
        case locket
        /// Anything else: another program's file, a link (a masked unit), a directory.
        case other(String)
    }

    /// What is at `path` now.
    public static func state(of path: String) -> FileState {
        var st = stat()
        guard lstat(path, &st) == 0 else { return .absent }
        guard st.st_mode & S_IFMT == S_IFREG else { return .other(PrivateFile.kindName(st.st_mode)) }
        guard let bytes = try? FileIO.readSmall(path, limit: 1 << 16) else { return .other("an unreadable file") }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").first.map(String.init) == marker ? .locket : .other("a file")
    }

    /// Whether locket is this user's provider: the user's switch is on, or
    /// the file the session bus would start for the name runs locket (the
    /// machine's choice, README "On a desktop").
    public static func isEnabled(environment: Environment) -> Bool {
        guard let paths = try? Paths(environment: environment) else { return false }
        if state(of: dbusServicePath(paths)) == .locket { return true }
        guard let started = ServiceFiles.activation(of: busName, in: paths.sessionServiceDirectories) else { return false }
        return ServiceFiles.startsLocket(started.exec)
    }

    static func dbusServicePath(_ paths: Paths) -> String {
        paths.dataHome + "/dbus-1/services/\(busName).service"
    }
}

extension ProviderActivation {
    /// The switch as it is today: the provider (a D-Bus activation file and a
    /// systemd user unit), gnome-keyring kept off the name for this user, and
    /// the secret portal pointed at locket for this user's desktop.
    public static let standardComponents: [Component] = [secretService, gnomeKeyring, secretPortal]

    /// `org.freedesktop.secrets` activated by the session bus: directly
    /// (`Exec=`) or, where the bus asks systemd, through the user unit.
    static let secretService = Component(name: "secret-service") { paths, command in
        let dbus = """
            \(marker)
            [D-BUS Service]
            Name=\(busName)
            Exec=\(ServiceFiles.dbusCommandLine(command))
            SystemdService=\(unitName)

            """
        let unit = """
            \(marker)
            [Unit]
            Description=locket: the Secret Service (org.freedesktop.secrets) from your keychains
            Documentation=man:locket(1)

            [Service]
            Type=dbus
            BusName=\(busName)
            ExecStart=\(ServiceFiles.systemdCommandLine(command))
            Restart=on-failure

            """
        return [File(path: dbusServicePath(paths), purpose: "D-Bus activation of \(busName)", contents: dbus),
                File(path: paths.configHome + "/systemd/user/" + unitName, purpose: "the systemd user unit", contents: unit)]
    }

    /// gnome-keyring claims the name itself when its session starts it (an
    /// XDG autostart entry; its systemd user unit, socket-activated by
    /// pam_gnome_keyring): this user's overrides keep its other parts and
    /// leave the Secret Service out. Written only where gnome-keyring's files are.
    static let gnomeKeyring = Component(name: "gnome-keyring") { paths, _ in
        var files: [File] = []
        let entry = "gnome-keyring-secrets.desktop"
        if paths.configDirectories.contains(where: { FileIO.exists($0 + "/autostart/" + entry) }) {
            files.append(File(path: paths.configHome + "/autostart/" + entry, purpose: "gnome-keyring's Secret Service autostart, hidden",
                              contents: "\(marker)\n[Desktop Entry]\nType=Application\nName=Secret Storage Service\nHidden=true\n"))
        }
        if let dropIn = ServiceFiles.gnomeKeyringDropIn(paths) {
            files.append(File(path: paths.configHome + "/systemd/user/gnome-keyring-daemon.service.d/locket.conf",
                              purpose: "gnome-keyring-daemon's unit without its Secret Service", contents: "\(marker)\n" + dropIn))
        }
        return files
    }
}

extension ProviderActivation {
    /// xdg-desktop-portal's configuration for the desktop `enable` runs in,
    /// its Secret backend set to locket's (PortalConfiguration). Written only
    /// where xdg-desktop-portal is installed and XDG_CURRENT_DESKTOP names a desktop.
    static let secretPortal = Component(name: "secret-portal") { paths, _ in
        guard let desktop = paths.desktops.first, PortalConfiguration.installed(paths) else { return [] }
        let contents = PortalConfiguration.choosingLocket(in: PortalConfiguration.current(paths, desktops: paths.desktops))
        return [File(path: PortalConfiguration.userFile(paths, desktop: desktop),
                     purpose: "the secret portal's backend for the \(desktop) desktop (xdg-desktop-portal 1.17 and later)",
                     contents: "\(marker)\n" + contents)]
    }
}
