import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The examples of the README's "Services and cloud tools" section, which
/// the services' end-to-end tests run as they stand (issue 29): the systemd
/// units, the credential socket's policy, the AWS profile, the kubeconfig user.
struct ServicesReadme {
    /// A unit file: its name and its `Key=value` lines, in order.
    struct Unit {
        var name: String
        var lines: [(key: String, value: String)]

        func values(_ key: String) -> [String] { lines.filter { $0.key == key }.map(\.value) }
        func value(_ key: String) -> String? { values(key).last }
    }

    var units: [String: Unit] = [:]
    var policy = ""
    var awsProfile = ""
    var kubeUser = ""
    /// The lines of the section's shell blocks.
    var shellLines: [String] = []

    /// The section's fenced blocks, recognized by their language and first line.
    static func load(file: StaticString = #filePath, line: UInt = #line) throws -> ServicesReadme {
        let readme = try String(contentsOfFile: LocketBinary.repositoryRoot + "/README.md", encoding: .utf8)
        let start = try XCTUnwrap(readme.range(of: "\n## Services and cloud tools\n"), "README.md has no Services and cloud tools section", file: file, line: line)
        let rest = readme[start.upperBound...]
        let section = rest[..<(rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex)]
        var found = ServicesReadme()
        var language: String?
        var block: [String] = []
        for text in section.split(separator: "\n", omittingEmptySubsequences: false) {
            if text.hasPrefix("```") {
                if let current = language {
                    found.take(language: current, block)
                    language = nil
                } else {
                    language = String(text.dropFirst(3))
                    block = []
                }
            } else if language != nil {
                block.append(String(text))
            }
        }
        return found
    }

    private mutating func take(language: String, _ block: [String]) {
        let text = block.joined(separator: "\n") + "\n"
        switch language {
        case "ini":
            if let first = block.first, first.hasPrefix("# /etc/systemd/system/") {
                let name = String(first.dropFirst("# /etc/systemd/system/".count))
                var unit = Unit(name: name, lines: [])
                for line in block.dropFirst() where !line.hasPrefix("[") && !line.hasPrefix("#") {
                    guard let eq = line.firstIndex(of: "=") else { continue }
                    unit.lines.append((String(line[..<eq]), String(line[line.index(after: eq)...])))
                }
                units[name] = unit
            } else if block.first == "# ~/.aws/config" {
                awsProfile = text
            }
        case "json": if policy.isEmpty { policy = text }
        case "yaml": if kubeUser.isEmpty { kubeUser = text }
        case "sh": shellLines += block
        default: break
        }
    }
}

/// The system's paths in the README's examples, moved under a test's root:
/// each test is its own machine, and nothing is written outside it.
struct MachineRoot {
    let root: String
    let binary: String
    static let prefixes = ["/var/lib", "/run/locket", "/run/credentials", "/etc/locket", "/etc/credstore.encrypted"]

    /// `text` with `/usr/local/bin/locket` the binary under test and each system path under the root.
    func map(_ text: String) -> String {
        var out = text.replacingOccurrences(of: "/usr/local/bin/locket", with: binary)
        for prefix in Self.prefixes { out = out.replacingOccurrences(of: prefix, with: root + prefix) }
        return out
    }

    func path(_ system: String) -> String { root + system }

    /// A unit's `Environment=` lines (space-separated NAME=VALUE, no quoting in the README's).
    func environment(of unit: ServicesReadme.Unit) -> [String: String] {
        var out: [String: String] = [:]
        for line in unit.values("Environment") {
            for assignment in map(line).split(separator: " ") {
                guard let eq = assignment.firstIndex(of: "=") else { continue }
                out[String(assignment[..<eq])] = String(assignment[assignment.index(after: eq)...])
            }
        }
        return out
    }

    /// The argv of a unit's ExecStart (unquoted words in the README's).
    func command(of unit: ServicesReadme.Unit) -> [String] {
        map(unit.value("ExecStart") ?? "").split(separator: " ").map(String.init)
    }
}

/// systemd's side of `Type=notify`: a datagram socket at `NOTIFY_SOCKET`.
final class NotifyListener {
    let path: String
    private let fd: Int32

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        guard fd >= 0, bound == 0 else { throw SystemdCredentialClient.Failure(description: "notify socket: \(String(cString: strerror(errno)))") }
    }

    deinit { close(fd); unlink(path) }

    /// The next message within `timeout` seconds, or nil.
    func next(timeout: Double) -> String? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
    }
}

extension BackgroundProcess {
    /// The non-empty lines of what the process wrote to stderr so far.
    var errLines: [String] { err.split(separator: "\n").map(String.init) }
}
