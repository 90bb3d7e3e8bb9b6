import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The credential helpers as `make install` links them: a directory holding
/// `NAME` (docker-credential-locket, git-credential-locket), a symlink to the
/// binary under test, to put first in a client's PATH.
public enum HelperLinks {
    /// `root/bin` with `name` linked to `binary` (made on first use); the directory.
    public static func directory(in root: String, linking name: String, to binary: String) throws -> String {
        let directory = root + "/bin"
        var st = stat()
        if lstat(directory, &st) != 0 { guard mkdir(directory, 0o755) == 0 else { throw POSIXError(.EIO) } }
        if lstat(directory + "/" + name, &st) != 0 {
            try FileManager.default.createSymbolicLink(atPath: directory + "/" + name, withDestinationPath: binary)
        }
        return directory
    }
}

/// A docker-registry on loopback with htpasswd basic auth (bcrypt) for one
/// user, on a port the kernel found free, storing into `root/data`: the
/// server the docker credential helper's real-client test logs in to.
public final class LoopbackRegistry {
    /// `127.0.0.1:PORT`, as docker names the registry.
    public let host: String
    public let process: BackgroundProcess

    /// Starts `registry` (docker-registry) with a password file `htpasswd`
    /// (apache2-utils) made for `user`; throws when either fails or it does
    /// not listen within 10 s.
    public init(registry: String, htpasswd: String, root: String, user: String, password: String) throws {
        guard mkdir(root, 0o700) == 0 else { throw UnexpectedOutput("cannot create \(root)") }
        let made = Spawn.run(htpasswd, ["-iBc", root + "/htpasswd", user], environment: ["PATH": "/usr/bin:/bin"],
                             input: .text(password), timeout: 30)
        guard made.status == 0 else { throw UnexpectedOutput("htpasswd: \(made.summary)") }
        let port = try Loopback.freePort()
        let config = """
            version: 0.1
            log:
              level: error
            storage:
              filesystem:
                rootdirectory: \(root)/data
            http:
              addr: 127.0.0.1:\(port)
            auth:
              htpasswd:
                realm: locket-test
                path: \(root)/htpasswd

            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: root + "/config.yml"))
        process = try BackgroundProcess(registry, ["serve", root + "/config.yml"],
                                        environment: ["PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": root])
        host = "127.0.0.1:\(port)"
        guard Loopback.waitForListener(port: port, timeout: 10) else {
            process.terminate()
            throw UnexpectedOutput("the registry did not listen on \(port) within 10 s: \(process.summary)")
        }
    }

    deinit { stop() }

    public func stop() { process.terminate() }
}
