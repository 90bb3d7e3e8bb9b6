import CLocketSystem
import Glibc
import LocketCore
import LocketSupport

/// `locket secret-service status`: whether locket is this user's Secret
/// Service (its switch's files), which file the session bus would start for
/// org.freedesktop.secrets, who owns the name now and whether it is
/// activatable. `--json` gives the same as one object (the man page's JSON).
extension Commands {
    static func secretServiceStatus(_ activation: ProviderActivation, _ context: Context) throws {
        let files = activation.files(command: ["locket"])
        let states = files.map { ProviderActivation.state(of: $0.path) }
        // The provider's own files decide; gnome-keyring's overrides follow them.
        let providerFiles = files.indices.filter { files[$0].path.hasSuffix(".secrets.service") || files[$0].path.hasSuffix("/" + ProviderActivation.unitName) }
        let enabled = !providerFiles.isEmpty && providerFiles.allSatisfy { states[$0] == .locket }
        let started = ServiceFiles.activation(of: ProviderActivation.busName, in: activation.paths.sessionServiceDirectories)
        let bus = busQuery(context)
        let busError = bus?["error"]
        let owner = bus?["owner"].flatMap { $0.isEmpty ? nil : $0 }
        if context.json {
            var w = JSONWriter()
            w.beginObject()
            w.key("enabled"); w.bool(enabled)
            w.key("files"); w.beginArray()
            for (file, state) in zip(files, states) {
                w.beginObject()
                w.key("path"); w.string(file.path)
                w.key("purpose"); w.string(file.purpose)
                w.key("state"); w.string(state == .locket ? "locket" : state == .absent ? "absent" : "other")
                w.endObject()
            }
            w.endArray()
            w.key("activation")
            if let started {
                w.beginObject()
                w.key("file"); w.string(started.path)
                w.key("exec"); w.string(started.exec)
                w.key("locket"); w.bool(started.isLocket)
                w.endObject()
            } else {
                w.null()
            }
            w.key("bus"); if let address = bus?["bus"] { w.string(address) } else { w.null() }
            w.key("owner")
            if let owner {
                w.beginObject()
                w.key("name"); w.string(owner)
                w.key("pid"); if let pid = bus?["pid"].flatMap({ Int64($0) }) { w.int(pid) } else { w.null() }
                w.key("executable"); if let executable = bus?["executable"] { w.string(executable) } else { w.null() }
                w.key("locket"); w.bool(isLocket(bus?["executable"]))
                w.endObject()
            } else {
                w.null()
            }
            w.key("activatable"); if let value = bus?["activatable"], busError == nil { w.bool(value == "yes") } else { w.null() }
            w.endObject()
            context.out.bytes(w.bytes)
            context.out.text("\n")
            return
        }
        context.out.line(enabled ? "locket is this user's Secret Service ('locket secret-service disable' puts back what was there)"
                                 : "locket is not this user's Secret Service ('locket secret-service enable' makes it so)")
        for (file, state) in zip(files, states) {
            let text = switch state {
            case .locket: "locket's"
            case .absent: "absent"
            case .other(let kind): "\(kind), not locket's"
            }
            context.out.line("  \(file.purpose): \(file.path) (\(text))")
        }
        if let started {
            context.out.line("started on demand: \(started.exec) (\(started.path)\(started.isLocket ? ", locket's" : ""))")
        } else {
            context.out.line("started on demand: nothing (no D-Bus service file names \(ProviderActivation.busName))")
        }
        if let busError {
            context.out.line("owner: unknown (\(busError))")
        } else if let bus {
            context.out.line(owner == nil ? "owner: nobody (the first program that asks starts the provider)" : "owner: \(ownerText(bus))")
            context.out.line("activatable: \(bus["activatable"] == "yes" ? "yes" : "no") (on \(bus["bus"] ?? "the session bus"))")
        } else {
            context.out.line("owner: unknown (locket-secret-service is not installed next to locket)")
        }
    }
}

/// A short-lived helper program whose standard output is read whole, with
/// a bound on time (status's bus query, `systemctl --user daemon-reload`).
enum ChildProcess {
    struct Result {
        var status: Int32
        var output: [UInt8]
    }

    /// Runs `path ARGUMENTS` with this process's environment, stdin from
    /// /dev/null and stderr discarded; nil when it could not start or did
    /// not finish within `milliseconds` (then it is killed).
    static func run(_ path: String, _ arguments: [String], context: Context, milliseconds: Int32) -> Result? {
        var pipe = [Int32](repeating: -1, count: 2)
        guard locket_pipe_cloexec(&pipe) == 0 else { return nil }
        let environment = context.environment.all.map { $0.name + [UInt8(ascii: "=")] + $0.value }
        let spawned = Spawner.spawn(path, argv: ([path] + arguments).map { Array($0.utf8) }, environment: environment,
                                    stdin: .devNull, stdout: .descriptor(pipe[1]), stderr: .devNull, newProcessGroup: true)
        close(pipe[1])
        defer { close(pipe[0]) }
        guard case .success(let pid) = spawned else { return nil }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let deadline = Clock.milliseconds() + Int64(milliseconds)
        while true {
            let left = deadline - Clock.milliseconds()
            var fd = pollfd(fd: pipe[0], events: Int16(POLLIN), revents: 0)
            let ready = valueOrErrno("poll") { poll(&fd, 1, Int32(clamping: max(0, left))) }
            guard left > 0, case .success(let count) = ready, count > 0 else {
                _ = Spawner.stop(pid, signal: SIGKILL, group: true)
                _ = Spawner.wait(pid)
                return nil
            }
            let n = chunk.withUnsafeMutableBytes { read(pipe[0], $0.baseAddress, $0.count) }
            if n <= 0 { break }
            if output.count < 1 << 16 { output += chunk[..<n] }
        }
        guard case .success(let ended) = Spawner.wait(pid) else { return nil }
        return Result(status: Spawner.shellStatus(ended.status), output: output)
    }
}
