import CCrypto
import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

/// The provider's process: `locket secret-service` parses its options from
/// the command table and execs this with them resolved:
///
///     locket-secret-service [--collection NAME PATH]... [--default NAME]
///                           [--replace] [--app EXECUTABLE ENTITLEMENTS]... [-- COMMAND [ARG]...]
///     locket-secret-service --query [--reload]   (NameQuery: who owns the name, for `status`)
///
/// Without COMMAND it serves the session bus of DBUS_SESSION_BUS_ADDRESS
/// until SIGTERM or SIGINT (exit 0), the bus going away (exit 0) or a
/// `--replace` taking the name (exit 0). With COMMAND it starts a private
/// bus (PrivateBus), serves it, runs COMMAND there, and exits with
/// COMMAND's status when it ends.
public enum SecretServiceMain {
    /// Runs the provider; returns the process's exit status.
    public static func run(_ arguments: [String]) -> Int32 {
        if arguments.count > 2 && arguments[1] == PrivateBus.daemonMode { return PrivateBus.execDaemon(Array(arguments.dropFirst(2))) }
        // Escaped as the command line escapes its stderr: a line may quote a client's executable or a keychain's path.
        let log: (String) -> Void = { line in
            let text = "locket secret-service: \(Printable.escape(line, backslashes: false))\n"
            _ = text.withCString { write(2, $0, strlen($0)) }
        }
        umask(0o077)
        if arguments.count >= 2 && arguments[1] == "--query" {
            return NameQuery.run(reload: arguments.count == 3 && arguments[2] == "--reload")
        }
        // Secrets pass through this process: no core dumps, no crash reports.
        locket_disable_core_dumps()
        signal(SIGPIPE, SIG_IGN)
        // A file size limit fails a write with EFBIG (errSecIO to the client) rather than kill the provider.
        signal(SIGXFSZ, SIG_IGN)
        _ = OPENSSL_init_crypto(UInt64(locket_init_no_config()), nil)
        let options: ProviderOptions
        let command: [String]
        do {
            (options, command) = try parse(Array(arguments.dropFirst()))
        } catch let error as ProviderError {
            log("error: \(error.message)")
            return 2
        } catch {
            return 2
        }
        let forwarded = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2]
        let watched = command.isEmpty ? [SIGINT, SIGTERM, SIGHUP] : forwarded + [SIGCHLD]
        let signals: Int32
        switch valueOrErrno("signalfd", { locket_signalfd(watched, Int32(watched.count)) }) {
        case .success(let fd): signals = fd
        case .failure(let failure):
            log("error: cannot watch for signals: \(failure)")
            return 1
        }
        defer { close(signals) }
        do {
            if command.isEmpty {
                guard let address = NameQuery.sessionBusAddress() else {
                    log("error: DBUS_SESSION_BUS_ADDRESS is not set: no session bus to serve (locket secret-service -- COMMAND starts a private one)")
                    return 1
                }
                let provider = try Provider(address: address, options: options, environment: .process, log: log)
                try provider.claimName()
                log("serving \(Provider.busName) on \(address)")
                provider.watchLogind()
                provider.serve(signals: signals) { _ in true }
                log(provider.stopped)
                return 0
            }
            return try PrivateBus.run(command, options: options, signals: signals, log: log)
        } catch let error as ProviderError {
            log("error: \(error.message)")
            return 1
        } catch let error as KeychainError {
            log("error: \(error)")
            return 1
        } catch {
            log("error: \(error)")
            return 1
        }
    }

    /// The internal command line `locket secret-service` builds.
    static func parse(_ arguments: [String]) throws -> (ProviderOptions, [String]) {
        var options = ProviderOptions()
        var i = 0
        func take() throws -> String {
            i += 1
            guard i < arguments.count else { throw ProviderError("\(arguments[i - 1]) needs a value") }
            return arguments[i]
        }
        while i < arguments.count {
            switch arguments[i] {
            case "--collection":
                let name = try take()
                options.collections.append((name, try take()))
            case "--default": options.defaultCollection = try take()
            case "--replace": options.replace = true
            case "--entitlements": options.entitlements = try take()
            case "--app":
                let executable = try take()
                options.apps.append((executable, try take()))
            case "--":
                let command = Array(arguments[(i + 1)...])
                guard !command.isEmpty else { throw ProviderError("-- needs a command") }
                return (options, command)
            default:
                throw ProviderError("unknown argument '\(arguments[i].prefix(64))' (run it as locket secret-service)")
            }
            i += 1
        }
        return (options, [])
    }
}
