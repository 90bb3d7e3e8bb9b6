import Glibc
import LocketCLI
import LocketCLIBackends
import LocketCore

// Test only: `locket ssh-agent` with keys from a directory instead of the
// keychain, which holds no keys yet (issue 13). The tests run this program
// as they would run `locket ssh-agent`, with real clients (ssh-add, ssh,
// ssh-keygen -Y, git) against it. Usage: LocketAgentTestHost KEYDIR [ssh-agent ARGS...]
//
// KEYDIR holds unencrypted private keys named NAME.key (NAME is the
// comment), in any format `locket import` reads (the tests' RSA key is
// PKCS#8: see AgentKeys). Every request reads the directory again, as the keychain's source
// will open the keychain for each one: while a file `locked` is there,
// signatures fail with errSecInteractionNotAllowed; while `hidden` is there,
// so does the list of identities. A file's key is parsed once for the bytes
// it holds (ParsedKeys), not at each of the dozens of requests a test makes
// of one agent (issue 38).

/// The keys parsed so far, by the exact bytes of their file: a file rewritten
/// with other bytes is parsed again, one that no longer parses fails again.
final class ParsedKeys {
    private var keys: [[UInt8]: AsymmetricKey] = [:]

    func key(_ bytes: ArraySlice<UInt8>, _ parse: () throws -> AsymmetricKey) rethrows -> AsymmetricKey {
        if let key = keys[Array(bytes)] { return key }
        let key = try parse()
        keys[Array(bytes)] = key
        return key
    }
}

struct DirectoryKeySource: AgentKeySource {
    let directory: String
    let parsed = ParsedKeys()

    func identities() throws -> [AgentIdentity] {
        if exists("hidden") { throw KeychainError(.interactionNotAllowed) }
        return try keys().map { AgentIdentity(publicKeyBlob: try $0.key.sshPublicKeyBlob(), comment: $0.name) }
    }

    func withPrivateKey<R>(publicKeyBlob: [UInt8], _ body: (any PrivateKeyOperations) throws -> R) throws -> R {
        if exists("locked") { throw KeychainError(.interactionNotAllowed) }
        guard let match = try keys().first(where: { try $0.key.sshPublicKeyBlob() == publicKeyBlob }) else {
            throw KeychainError(.itemNotFound)
        }
        return try body(match.key)
    }

    private func exists(_ name: String) -> Bool { access(directory + "/" + name, F_OK) == 0 }

    private func keys() throws -> [(name: String, key: AsymmetricKey)] {
        guard let dir = opendir(directory) else { throw KeychainError(.io, "cannot read \(directory)") }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.baseAddress!.assumingMemoryBound(to: CChar.self)) }
            if name.hasSuffix(".key") { names.append(name) }
        }
        return try names.sorted().map { name in
            let fd = open(directory + "/" + name, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw KeychainError(.io, "cannot read \(name)") }
            defer { close(fd) }
            var bytes = [UInt8](repeating: 0, count: 65_536)
            let n = read(fd, &bytes, bytes.count)
            guard n > 0 else { throw KeychainError(.io, "cannot read \(name)") }
            defer { for i in bytes.indices { bytes[i] = 0 } }
            let key = try parsed.key(bytes[0..<n]) {
                let data = try SecureBytes(copying: bytes[0..<n])
                let file = try KeyImport.parse(data, passphrase: { throw KeychainError(.param, "\(name) is encrypted") })
                guard let key = file.keys.first?.key else { throw KeychainError(.decode, "\(name) holds no key") }
                return key
            }
            return (String(name.dropLast(4)), key)
        }
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    let usage = "usage: LocketAgentTestHost KEYDIR [ssh-agent ARGS...]\n"
    _ = usage.withCString { write(2, $0, strlen($0)) }
    exit(2)
}
exit(SSHAgentCommand.run(Array(arguments.dropFirst(2)), io: .standard, backends: .all, source: DirectoryKeySource(directory: arguments[1])))
