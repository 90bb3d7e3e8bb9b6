import Glibc
import LocketCore
import LocketSupport

/// `locket secret-service enable | disable | status` (SPEC §20): the switch
/// that makes locket this user's Secret Service (`ProviderActivation` writes
/// and removes its files), and what the session bus says about the name
/// (asked by the provider's executable, `locket-secret-service --query`:
/// locket links no D-Bus).
extension Commands {
    static func secretServiceSwitch(_ subcommand: String, _ invocation: Invocation, _ context: Context) throws -> Int32 {
        if !invocation.operands.isEmpty {
            throw UsageError(message: "secret-service \(subcommand) takes no argument '\(Printable.clip(invocation.operands[0]))' (a command to run goes after --)",
                             command: "secret-service")
        }
        if invocation.has("replace") { throw UsageError(message: "--replace can't be used with \(subcommand)", command: "secret-service") }
        if subcommand != "enable" {
            for option in ["force", "keychain", "app"] where invocation.has(option) {
                throw UsageError(message: "--\(option) is for secret-service enable, not \(subcommand)", command: "secret-service")
            }
            if context.globals.keychain != nil || context.globals.entitlements != nil {
                throw UsageError(message: "-k and -e are for secret-service enable, not \(subcommand)", command: "secret-service")
            }
        }
        let activation = try ProviderActivation(environment: context.environment)
        switch subcommand {
        case "enable":
            let changes = try activation.enable(command: try providerCommand(invocation, context), force: invocation.has("force"))
            report(changes, context)
            reloadSystemdUserManager(context)
            let bus = busQuery(context, reload: true)
            context.out.line("locket is this user's Secret Service: the first program that asks for org.freedesktop.secrets starts it")
            if let owner = bus?["owner"], !owner.isEmpty, !isLocket(bus?["executable"]) {
                context.warn("\(ownerText(bus!)) owns org.freedesktop.secrets now: locket answers once it exits (at the next login), or at once after 'locket secret-service --replace'")
            }
        case "disable":
            let changes = try activation.disable()
            report(changes, context)
            reloadSystemdUserManager(context)
            context.out.line(changes.isEmpty ? "locket was not this user's Secret Service: nothing to change"
                                             : "locket is no longer this user's Secret Service")
            if let bus = busQuery(context, reload: true), isLocket(bus["executable"]) {
                context.warn("\(ownerText(bus)) serves this session until it exits")
            }
        default:
            try secretServiceStatus(activation, context)
        }
        return 0
    }

    /// The provider's command line as the switch's files run it: this
    /// executable, then every path absolute (systemd runs it from `/`).
    static func providerCommand(_ invocation: Invocation, _ context: Context) throws -> [String] {
        guard let executable = readLink("/proc/self/exe") else { throw KeychainError(.io, "cannot tell where this locket executable is") }
        var command = [executable]
        if let entitlements = try context.globals.entitlements ?? context.environment["LOCKET_ENTITLEMENTS"].flatMap({ $0.isEmpty ? nil : $0 }) {
            _ = try context.caller()
            command += ["-e", try absolutePath(entitlements)]
        }
        command.append("secret-service")
        var specs = invocation.all("keychain")
        if specs.isEmpty, let global = context.globals.keychain { specs = [global] }
        for spec in specs {
            let location = try context.backends.resolve(spec, context.environment)
            guard let path = location.filePath else {
                throw KeychainError(.notAvailable, "the Secret Service serves keychain files, not a remote keychain (\(location.description))")
            }
            // The keychain may not exist yet (the provider makes it at the first store).
            command += ["-k", path.hasPrefix("/") ? path : try absolutePath(".") + "/" + path]
        }
        for app in invocation.all("app") {
            guard let equals = app.firstIndex(of: "="), equals != app.startIndex, app.index(after: equals) != app.endIndex else {
                throw UsageError(message: "--app takes EXECUTABLE=ENTITLEMENTS, not '\(Printable.clip(app))'", command: "secret-service")
            }
            command += ["--app", try absolutePath(String(app[..<equals])) + "=" + absolutePath(String(app[app.index(after: equals)...]))]
        }
        return command
    }

    private static func absolutePath(_ path: String) throws -> String {
        guard let resolved = realpath(path, nil) else {
            throw KeychainError(.io, "cannot find \(Printable.clip(path, max: 256)): \(Errno(errno))")
        }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    private static func report(_ changes: [ProviderActivation.Change], _ context: Context) {
        for change in changes {
            switch change {
            case .wrote(let path): context.out.line("wrote \(path)")
            case .setAside(let path): context.out.line("set aside \(path) (disable puts it back)")
            case .removed(let path): context.out.line("removed \(path)")
            case .putBack(let path): context.out.line("put back \(path)")
            case .leftAlone(let path, let why): context.warn("left \(path) as it is: \(why)")
            }
        }
    }

    /// A running systemd user manager reads unit files again (a new unit,
    /// a new drop-in); none running (a container, CI) is not an error.
    private static func reloadSystemdUserManager(_ context: Context) {
        guard let runtime = (try? context.environment["XDG_RUNTIME_DIR"]) ?? nil, OutputFile.exists(runtime + "/systemd/private") else { return }
        for directory in ["/usr/bin", "/bin"] where access(directory + "/systemctl", X_OK) == 0 {
            let result = ChildProcess.run(directory + "/systemctl", ["--user", "daemon-reload"], context: context, milliseconds: 10_000)
            if result?.status != 0 { context.warn("systemctl --user daemon-reload failed: the user manager sees the new unit at the next login") }
            return
        }
    }

    /// What the session bus says (`key=value` lines of `locket-secret-service
    /// --query`), after it read its service directories again with `reload`;
    /// nil when it can't be asked.
    static func busQuery(_ context: Context, reload: Bool = false) -> [String: String]? {
        guard let provider = CompanionExecutable.find("locket-secret-service"),
              let result = ChildProcess.run(provider, ["--query"] + (reload ? ["--reload"] : []), context: context, milliseconds: 5_000),
              result.status == 0 else { return nil }
        var values: [String: String] = [:]
        for line in String(decoding: result.output, as: UTF8.self).split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return values
    }

    static func isLocket(_ executable: String?) -> Bool {
        guard let executable else { return false }
        return executable.hasSuffix("/locket-secret-service") || executable.hasSuffix("/locket")
    }

    static func ownerText(_ bus: [String: String]) -> String {
        let name = bus["executable"].map { String($0.split(separator: "/").last ?? "") } ?? bus["owner"] ?? "?"
        return bus["pid"].map { "\(name) (pid \($0))" } ?? name
    }
}
