import Glibc
import LocketCore
import LocketSupport

/// `locket secret-service` (SPEC §18): the Secret Service provider lives in
/// its own executable, `locket-secret-service` (libdbus-1 is linked into it
/// alone, so `find` pays nothing for D-Bus), found as the PostgreSQL helper
/// is (`CompanionExecutable.find`). This command resolves the keychains (as
/// every command does, `KeychainLocator`) and the options from the command
/// table, then execs the provider with them, so the provider is the process
/// the user started: signals reach it, and its exit status (COMMAND's, with
/// `--`) is the command's. `enable`, `disable` and `status` (SPEC §20) are
/// the switch that makes it the session's provider (SecretServiceSwitch.swift).
extension Commands {
    static let secretServiceSpec = CommandSpec(
        name: "secret-service",
        usage: "[-k KEYCHAIN]... [--replace] [--app EXECUTABLE=ENTITLEMENTS]... [-- COMMAND [ARG]...] | enable [--force] [-k KEYCHAIN]... [--app EXECUTABLE=ENTITLEMENTS]... | disable | status",
        summary: "serve the keychains to every program over the freedesktop Secret Service API (D-Bus); enable, disable or show it as this user's session keyring",
        options: [
            OptionSpec("keychain", "k", .value("KEYCHAIN"), repeatable: true, completion: .keychain,
                       "serve this keychain as a collection (repeatable; default: the default keychain, the collection login, alias default)"),
            OptionSpec("replace", nil, .flag, "take org.freedesktop.secrets from the process that owns it (say, gnome-keyring-daemon)"),
            OptionSpec("app", nil, .value("EXECUTABLE=ENTITLEMENTS"), repeatable: true, completion: .file,
                       "callers running EXECUTABLE get only the access groups of the entitlements file ENTITLEMENTS (repeatable)"),
            OptionSpec("force", "f", .flag, "enable: set aside the files in its way that are not locket's (disable puts them back)"),
        ],
        conflicts: [], operands: true, run: secretService, operandsEndOptions: true, subcommands: ["enable", "disable", "status"])

    static func secretService(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        if let subcommand = invocation.subcommand { return try secretServiceSwitch(subcommand, invocation, context) }
        if invocation.has("force") { throw UsageError(message: "--force is for secret-service enable", command: "secret-service") }
        let environment = context.environment
        var specs = invocation.all("keychain")
        if specs.isEmpty { specs = [context.globals.keychain].compactMap { $0 } }
        let defaultLocation = try context.backends.resolve(nil, environment)
        var arguments = ["locket-secret-service"]
        var names: [String] = []
        for spec in specs.isEmpty ? [nil] : specs.map(Optional.some) {
            let location = try context.backends.resolve(spec, environment)
            // A collection is a file the provider stats, makes and deletes, and
            // a remote keychain stores no free-form attributes (docs/architecture/free-form.md).
            guard let path = location.filePath else {
                throw KeychainError(.notAvailable, "the Secret Service serves keychain files, not a remote keychain (\(location.description))")
            }
            var name = String(path.split(separator: "/").last ?? "login")
            if name.hasSuffix(".keychain") { name.removeLast(".keychain".count) }
            guard !names.contains(name) else {
                throw UsageError(message: "two keychains named '\(name)': each collection needs its own name", command: "secret-service")
            }
            names.append(name)
            arguments += ["--collection", name, path]
            // The same keychain: a file's location is the same as another's when it is a file at the same path.
            if defaultLocation.filePath == path { arguments += ["--default", name] }
        }
        if invocation.has("replace") { arguments.append("--replace") }
        for app in invocation.all("app") {
            guard let equals = app.firstIndex(of: "="), equals != app.startIndex, app.index(after: equals) != app.endIndex else {
                throw UsageError(message: "--app takes EXECUTABLE=ENTITLEMENTS, not '\(Printable.clip(app))'", command: "secret-service")
            }
            arguments += ["--app", String(app[..<equals]), String(app[app.index(after: equals)...])]
        }
        // -e: every caller the executable map does not name gets this app's groups.
        if let entitlements = try context.globals.entitlements ?? environment["LOCKET_ENTITLEMENTS"].flatMap({ $0.isEmpty ? nil : $0 }) {
            _ = try context.caller()
            arguments += ["--entitlements", entitlements]
        }
        if !invocation.operands.isEmpty { arguments += ["--"] + invocation.operands }
        guard let helper = CompanionExecutable.find("locket-secret-service") else {
            throw KeychainError(.notAvailable, "locket-secret-service is not installed next to locket (make install)")
        }
        context.out.flush()
        let argv = CStringArray(arguments)
        defer { argv.free() }
        let failure = nothingOrErrno("execv") { execv(helper, argv.pointers) }.error
        throw KeychainError(.notAvailable, "cannot run \(helper): \(failure.map(String.init(describing:)) ?? "exec returned")")
    }
}
