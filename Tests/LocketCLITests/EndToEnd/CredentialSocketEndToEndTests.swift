import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 29, points 1 and 2: a server that unlocks itself at boot and hands
/// its services their secrets through systemd's `LoadCredential=`. The first
/// test runs the README's units as systemd would on a machine whose system
/// paths live under the test's root: `systemd-creds` seals the password (the
/// host key: there is no TPM here), the unlocking unit's ExecStart reads it
/// from `$CREDENTIALS_DIRECTORY`, the credential socket's ExecStart answers
/// the deploy unit's `LoadCredential=` lines from a client that connects
/// exactly as systemd does.
final class CredentialSocketEndToEndTests: EndToEndCase {
    static let token = "ghp_deploy_token_0123456789"
    var servers: [BackgroundProcess] = []

    override func tearDown() {
        for server in servers { server.terminate() }
        servers = []
        super.tearDown()
    }

    /// What every command of these tests runs with besides a unit's own
    /// environment: sessions in the test's own directory, never root's
    /// kernel keyring (the test would leave keys there that never expire).
    var hygiene: [String: String] {
        ["PATH": "/usr/local/bin:/usr/bin:/bin", "LOCKET_SESSION": "dir", "XDG_RUNTIME_DIR": sandbox.runtimeDir]
    }

    func testTheReadmeBootPath() throws {
        let readme = try ServicesReadme.load()
        let unlockUnit = try XCTUnwrap(readme.units["locket-unlock.service"], "README: no locket-unlock.service")
        let socketUnit = try XCTUnwrap(readme.units["locket-credentials.service"], "README: no locket-credentials.service")
        let deployUnit = try XCTUnwrap(readme.units["deploy.service"], "README: no deploy.service")
        let systemdCreds = try systemdCredsPath()
        let machine = MachineRoot(root: sandbox.root + "/machine", binary: binary)
        for directory in ["/var/lib", "/etc/locket", "/etc/credstore.encrypted", "/run/credentials"] {
            XCTAssertNoThrow(try FileManager.default.createDirectory(atPath: machine.path(directory), withIntermediateDirectories: true,
                                                                     attributes: [.posixPermissions: 0o755]))
        }

        // Set-up, as the README's shell block does it: the system keychain
        // where the units' environment puts it, one secret in its group, locked.
        let system = machine.environment(of: unlockUnit)
        XCTAssertEqual(system, machine.environment(of: socketUnit), "the two units must agree on where the keychain is")
        initKeychain(environment: system.merging(hygiene) { $1 })
        let added = locket(["add", "-s", "github", "-a", "deploy", "--access-group", "deploy", "-w"], input: .text(Self.token),
                           environment: system.merging(hygiene) { $1 })
        XCTAssertEqual(added.status, 0, added.summary)
        XCTAssertTrue(fileExists(machine.path("/var/lib/locket/login.keychain")))
        locket(["lock", "--all"], environment: system.merging(hygiene) { $1 })

        // The password sealed by systemd-creds, to the name LoadCredentialEncrypted= gives.
        let sealed = try XCTUnwrap(unlockUnit.value("LoadCredentialEncrypted")).split(separator: ":", maxSplits: 1).map(String.init)
        XCTAssertEqual(sealed.count, 2)
        let (name, encrypted) = (sealed[0], machine.map(sealed[1]))
        let hostKey = ["SYSTEMD_CREDENTIAL_SECRET": machine.path("/var/lib/systemd-credential.secret")]
        let encrypt = runTool(systemdCreds, ["encrypt", "--with-key=host", "--name=\(name)", "-", encrypted],
                              input: .text(Self.password + "\n"), environment: hostKey)
        XCTAssertEqual(encrypt.status, 0, encrypt.summary)
        XCTAssertFalse(try XCTUnwrap(readText(encrypted)).contains(Self.password))

        // What systemd does for LoadCredentialEncrypted= before ExecStart: the
        // decrypted password in the unit's credentials directory, file 0400, directory 0500.
        let credentials = machine.path("/run/credentials/locket-unlock.service")
        XCTAssertEqual(mkdir(credentials, 0o700), 0)
        let decrypt = runTool(systemdCreds, ["decrypt", "--name=\(name)", encrypted, "-"], environment: hostKey)
        XCTAssertEqual(decrypt.status, 0, decrypt.summary)
        XCTAssertTrue(FileManager.default.createFile(atPath: credentials + "/" + name, contents: Data(decrypt.stdout),
                                                     attributes: [.posixPermissions: 0o400]))
        chmod(credentials, 0o500)

        // locket-unlock.service's ExecStart, with what systemd gives a root
        // service: its Environment= lines and CREDENTIALS_DIRECTORY, no HOME.
        let unlockCommand = machine.command(of: unlockUnit)
        XCTAssertEqual(unlockCommand.first, binary)
        let unlocked = Spawn.run(unlockCommand[0], Array(unlockCommand.dropFirst()),
                                 environment: system.merging(hygiene) { $1 }.merging(["CREDENTIALS_DIRECTORY": credentials]) { $1 },
                                 input: .devNull, timeout: Self.timeout)
        XCTAssertEqual(unlocked.status, 0, unlocked.summary)
        XCTAssertEqual(unlocked.err, "", unlocked.summary)
        let status = try locket(["--json", "status"], environment: system.merging(hygiene) { $1 }).jsonObject()
        XCTAssertEqual(status["whenUnlocked"] as? String, "unlocked")
        XCTAssertTrue(status["secondsUntilAutoLock"] is NSNull, "--timeout none: no auto-lock")

        // locket-credentials.service: Type=notify, its policy the README's.
        XCTAssertEqual(socketUnit.value("Type"), "notify")
        let socketCommand = machine.command(of: socketUnit)
        let policyPath = try XCTUnwrap(socketCommand.firstIndex(of: "--policy").map { socketCommand[$0 + 1] })
        writeFile(policyPath, readme.policy, mode: 0o644)
        let notify = try NotifyListener(path: sandbox.root + "/notify")
        let server = try BackgroundProcess(socketCommand[0], Array(socketCommand.dropFirst()),
                                           environment: system.merging(hygiene) { $1 }.merging(["NOTIFY_SOCKET": notify.path]) { $1 })
        servers.append(server)
        XCTAssertEqual(notify.next(timeout: 10), "READY=1", server.summary)

        // deploy.service's LoadCredential= lines, loaded as systemd loads them.
        let loads = deployUnit.values("LoadCredential")
        XCTAssertFalse(loads.isEmpty)
        var socketPath = ""
        for load in loads {
            let parts = load.split(separator: ":", maxSplits: 1).map(String.init)
            socketPath = machine.map(parts[1])
            XCTAssertEqual(mode(socketPath), 0o600)
            XCTAssertEqual(try SystemdCredentialClient.load(socketPath, unit: "deploy.service", id: parts[0]), Array(Self.token.utf8))
        }
        // Refused: an ID the policy does not give, a unit it does not name.
        XCTAssertEqual(try SystemdCredentialClient.load(socketPath, unit: "deploy.service", id: "db-password"), [])
        XCTAssertEqual(try SystemdCredentialClient.load(socketPath, unit: "evil.service", id: "github-token"), [])
        // Locked: nothing, and the log says why.
        locket(["lock", "--all"], environment: system.merging(hygiene) { $1 })
        XCTAssertEqual(try SystemdCredentialClient.load(socketPath, unit: "deploy.service", id: "github-token"), [])

        kill(server.pid, SIGTERM)
        XCTAssertTrue(server.wait(timeout: 10), server.summary)
        XCTAssertEqual(server.status, 0, server.summary)
        XCTAssertFalse(fileExists(socketPath), "the socket outlived its server")
        let log = server.errLines
        XCTAssertTrue(log.contains("locket credential-socket: gave github-token to deploy.service (\(Self.token.utf8.count) bytes)"), server.err)
        XCTAssertTrue(log.contains("locket credential-socket: refused db-password to deploy.service: the policy gives this unit no such credential (errSecMissingEntitlement -34018)"), server.err)
        XCTAssertTrue(log.contains("locket credential-socket: refused github-token to evil.service: the policy gives this unit no such credential (errSecMissingEntitlement -34018)"), server.err)
        XCTAssertTrue(log.contains { $0.hasPrefix("locket credential-socket: refused github-token to deploy.service: ") && $0.contains("errSecInteractionNotAllowed") }, server.err)
        XCTAssertFalse(server.err.contains(Self.token), "a secret reached the log")
    }

    /// 100 connections at once, granted and refused mixed, each answered by
    /// its own unit and ID (the address, not the order, decides).
    func testAHundredConnectionsAtOnce() throws {
        initKeychain()
        add("-s", "github", "-a", "deploy", "-g", "deploy", secret: Self.token)
        add("-s", "db", "-a", "app", "-g", "app", secret: "db-secret")
        let policy = sandbox.root + "/credentials.json"
        writeFile(policy, #"""
            {"units": {"deploy.service": {"access-groups": ["deploy"], "credentials": {"github-token": "github/deploy"}},
                       "app@.service": {"access-groups": ["app"], "credentials": {"db": "db/app", "stolen": "github/deploy"}}}}
            """#, mode: 0o600)
        let socketPath = sandbox.runtimeDir + "/locket/credentials.sock"
        let server = try startServer(["--socket", socketPath, "--policy", policy])
        var expected: [[UInt8]] = []
        var descriptors: [Int32] = []
        for k in 0..<100 {
            let (unit, id, answer): (String, String, String) =
                switch k % 4 {
                case 0: ("deploy.service", "github-token", Self.token)
                case 1: ("app@\(k).service", "db", "db-secret")
                // The app's groups do not hold the deploy token, whatever its policy names.
                case 2: ("app@\(k).service", "stolen", "")
                default: ("deploy.service", "db", "")
                }
            descriptors.append(try SystemdCredentialClient.connect(socketPath, unit: unit, id: id))
            expected.append(Array(answer.utf8))
        }
        for (fd, answer) in zip(descriptors, expected) {
            XCTAssertEqual(try SystemdCredentialClient.readToEnd(fd), answer)
        }
        XCTAssertTrue(server.waitUntil(timeout: 10) { server.errLines.count >= 101 }, server.summary)
        XCTAssertEqual(server.errLines.filter { $0.contains(" gave ") }.count, 50)
        XCTAssertEqual(server.errLines.filter { $0.contains(" refused ") }.count, 50)
        XCTAssertEqual(server.errLines.filter { $0.contains("refused stolen to app@") && $0.contains("no item in the unit's access groups (app) matches github/deploy") }.count, 25,
                       server.err)
        XCTAssertFalse(server.err.contains(Self.token))
    }

    /// Only root (systemd) and the socket's owner may ask: another uid that
    /// can reach the socket (here by CAP_DAC_OVERRIDE) gets nothing.
    func testAnotherUidIsRefused() throws {
        guard geteuid() == 0 else { throw XCTSkip("needs root, to connect as another uid") }
        let setpriv = try SystemTool.require("setpriv", for: "connecting as another uid")
        let python = try SystemTool.require("python3", for: "a client of another uid")
        initKeychain()
        add("-s", "github", "-a", "deploy", secret: Self.token)
        let policy = sandbox.root + "/credentials.json"
        writeFile(policy, #"{"units": {"deploy.service": {"access-groups": ["default"], "credentials": {"github-token": "github/deploy"}}}}"#, mode: 0o600)
        let socketPath = sandbox.runtimeDir + "/locket/credentials.sock"
        let server = try startServer(["--socket", socketPath, "--policy", policy])
        XCTAssertEqual(try SystemdCredentialClient.load(socketPath, unit: "deploy.service", id: "github-token"), Array(Self.token.utf8))
        let client = """
            import os, socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind("\\0%x/unit/deploy.service/github-token" % int.from_bytes(os.urandom(8), "big"))
            s.connect(sys.argv[1]); s.shutdown(socket.SHUT_WR)
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
            print(len(data))
            """
        writeFile(sandbox.root + "/client.py", client)
        let other = runTool(setpriv, ["--reuid=12345", "--regid=12345", "--clear-groups", "--inh-caps=+dac_override",
                                      "--ambient-caps=+dac_override", python, sandbox.root + "/client.py", socketPath])
        guard other.status == 0 else { throw XCTSkip("cannot connect as another uid here (setpriv): \(other.err)") }
        XCTAssertEqual(other.out, "0\n")
        XCTAssertTrue(server.waitUntil(timeout: 10) { server.err.contains("refused a connection from uid 12345") }, server.summary)
    }

    /// The socket lives only where nobody else can put another in its place;
    /// a broken policy stops the service before it listens; a killed one's
    /// socket is replaced, a running one's is not.
    func testWhereTheSocketMayLive() throws {
        initKeychain()
        let policy = sandbox.root + "/credentials.json"
        writeFile(policy, #"{"units": {}}"#, mode: 0o644)
        let shared = sandbox.root + "/shared"
        XCTAssertEqual(mkdir(shared, 0o777), 0)
        chmod(shared, 0o1777)
        let refused = expect(220, "credential-socket", "--socket", shared + "/credentials.sock", "--policy", policy)
        XCTAssertTrue(refused.err.contains("\(shared) is writable by other users (mode 1777); run chmod go-w on it"), refused.err)
        XCTAssertTrue(refused.err.contains("only in a directory that only you (or root) control"), refused.err)
        XCTAssertFalse(fileExists(shared + "/credentials.sock"))

        writeFile(sandbox.root + "/bad.json", #"{"units": {"deploy.service": {"credentials": {}}}}"#, mode: 0o644)
        let bad = expect(206, "credential-socket", "--socket", sandbox.root + "/sock/credentials.sock", "--policy", sandbox.root + "/bad.json")
        XCTAssertTrue(bad.err.contains(#"needs "access-groups""#), bad.err)
        XCTAssertFalse(fileExists(sandbox.root + "/sock"), "nothing is made before the policy is read")
        chmod(policy, 0o666)
        expect(206, "credential-socket", "--socket", sandbox.root + "/sock/credentials.sock", "--policy", policy)
        chmod(policy, 0o644)

        writeFile(sandbox.root + "/file.sock", "")
        let notSocket = expect(220, "credential-socket", "--socket", sandbox.root + "/file.sock", "--policy", policy)
        XCTAssertTrue(notSocket.err.contains("exists and is not a socket of yours"), notSocket.err)

        // A server removes its socket, and the directory it made, when it stops.
        let path = sandbox.root + "/sock/credentials.sock"
        let first = try startServer(["--socket", path, "--policy", policy])
        XCTAssertEqual(mode(sandbox.root + "/sock"), 0o700)
        kill(first.pid, SIGTERM)
        XCTAssertTrue(first.wait(timeout: 10))
        XCTAssertEqual(first.status, 0, first.summary)
        XCTAssertFalse(fileExists(sandbox.root + "/sock"), "the directory it made goes with it")
        // A killed server's socket is replaced; a running server's is not.
        let killed = try startServer(["--socket", path, "--policy", policy])
        kill(killed.pid, SIGKILL)
        XCTAssertTrue(killed.wait(timeout: 10))
        XCTAssertTrue(fileExists(path))
        let second = try startServer(["--socket", path, "--policy", policy])
        let busy = expect(220, "credential-socket", "--socket", path, "--policy", policy)
        XCTAssertTrue(busy.err.contains("another credential socket is listening at \(path)"), busy.err)
        kill(second.pid, SIGTERM)
        XCTAssertTrue(second.wait(timeout: 10))
        XCTAssertEqual(second.status, 0, second.summary)
        XCTAssertFalse(fileExists(path))
    }

    // MARK: - Helpers

    func systemdCredsPath() throws -> String {
        let path = try SystemTool.require("systemd-creds", for: "sealing the keychain password (Debian package systemd)")
        // It needs no systemd as PID 1 and, with SYSTEMD_CREDENTIAL_SECRET, no root: only itself.
        let version = Spawn.run(path, ["--version"], environment: hygiene, input: .devNull, timeout: 10)
        guard version.status == 0 else { throw XCTSkip("systemd-creds cannot run here: \(version.err)") }
        return path
    }

    /// `locket credential-socket ARGS`, once it says it is ready.
    func startServer(_ arguments: [String]) throws -> BackgroundProcess {
        let notify = try NotifyListener(path: sandbox.root + "/notify.\(servers.count)")
        let server = try startLocket(["credential-socket"] + arguments, environment: ["NOTIFY_SOCKET": notify.path])
        servers.append(server)
        guard notify.next(timeout: 10) == "READY=1" else {
            server.pump(0.1)
            throw SystemdCredentialClient.Failure(description: "the credential socket did not get ready: \(server.summary)")
        }
        return server
    }
}
