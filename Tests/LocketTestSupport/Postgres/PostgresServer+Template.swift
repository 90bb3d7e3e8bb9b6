import Foundation
import LocketSystem

#if canImport(Glibc)
import Glibc
#endif

// One initdb and one throwaway CA per run (issue 38). The first server of a
// run, shared or private, makes its data directory, TLS files and superuser
// password as before, and keeps a copy of them, as initdb left them, in the
// run's directory (`TestRun`); every later server of the
// run copies that instead of running initdb (~0.8 CPU-s of PostgreSQL's
// bootstrap) and four openssl commands again. The servers of one run so
// share the password and the CA: no test tells them apart by either (each
// still has its own data, port, socket, account and watchdog).
extension PostgresServer {
    /// `data`, `tls/` and `password`: copied from the run's template, or made here and kept as it.
    func makeFiles(_ bin: String) throws {
        let run = try TestRun.directory()
        // Two processes starting their first server at once: one initdb, the other waits and copies.
        try TestRun.locked("\(run)/template.lock") { try makeOrCopyFiles(bin, template: "\(run)/template") }
    }

    private func makeOrCopyFiles(_ bin: String, template: String) throws {
        // The password is written last: a template without one was cut short and is made again.
        if let kept = FileManager.default.contents(atPath: "\(template)/password"), !kept.isEmpty {
            password = String(decoding: kept, as: UTF8.self)
            // `cp -a` keeps initdb's modes (0700 data directory, 0600 key); the account takes them over.
            let owner = account.map { "chown -R \($0.uid):\($0.gid) \"$2/data\" \"$2/tls\"" } ?? "true"
            try Self.run("/bin/sh", ["-c", "cp -a \"$1/data\" \"$2/data\" && cp -a \"$1/tls/.\" \"$2/tls/\" && \(owner)", "copy", template, root])
            return
        }
        password = (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        try makeCertificates()
        try Data("\(password)\n".utf8).write(to: URL(fileURLWithPath: "\(root)/pwfile"))
        if let account {
            // The key must be the server account's and private.
            for path in ["\(root)/pwfile", "\(root)/tls/server.key", "\(root)/tls/server.crt"] {
                guard chown(path, account.uid, account.gid) == 0 else { throw POSIXError(.EPERM) }
            }
        }
        chmod("\(root)/tls/server.key", 0o600)
        try runAsServer("\(bin)/initdb", ["-D", data, "-U", Self.user, "--pwfile=\(root)/pwfile", "-E", "UTF8", "--locale=C",
                                         "--auth-local=trust", "--auth-host=scram-sha-256", "-N"])
        unlink("\(root)/pwfile")
        try Self.run("/bin/sh", ["-c", "rm -rf \"$1\" && mkdir -m 700 \"$1\" && cp -a \"$2/data\" \"$2/tls\" \"$1/\"", "keep", template, root])
        guard FileManager.default.createFile(atPath: "\(template)/password", contents: Data(password.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ServerFailure(description: "could not write \(template)/password")
        }
    }
}
