import Foundation
import LocketCore
import LocketRemote
import LocketSupport
import LocketTestSupport
import XCTest

/// A keychain in a private temporary directory, with its own XDG directories,
/// device secret and session. `remove()` locks everything it unlocked (the
/// kernel keyring outlives the test process) and deletes the directory.
final class TemporaryKeychain {
    let directory: String
    let environment: Environment
    let path: String
    let password: String?
    /// Set for a keychain in PostgreSQL (SPEC §17); `path` is then its URL.
    var remote: RemoteLocation?
    /// Whether the keychain is in this process's memory (`MemoryKeychains`); `path` is then its address.
    var inMemory = false
    /// The clock and sleeper every open runs on unless it is given one (a
    /// `VirtualClock`'s, set by KeychainTestCase); nil: the system's.
    var time: TimeSource?

    /// Creates a keychain (`password` nil: one without a password). A keychain
    /// with a password starts unlocked, as after `locket init`.
    /// libsodium's minimum Argon2id cost by default: the keychain opens fast on
    /// its own device, where its header authenticates. A copy opened on another
    /// device (`init(copyOf:)`) needs `.interactive`, locket's floor there.
    init(password: String? = "correct horse", session: String = "dir", name: String = "test",
         sharing other: TemporaryKeychain? = nil, kdf: KDFCost = .weakForTests) throws {
        if let other {
            // A second keychain in the same environment (same session store and device secret).
            directory = other.directory
            environment = other.environment
        } else {
            (directory, environment) = try TemporaryKeychain.makeEnvironment(session: session)
        }
        path = directory + "/data/locket/\(name).keychain"
        self.password = password
        try Keychain.create(at: path, password: password.map(secret), kdf: kdf, environment: environment)
    }

    /// A keychain in the database at `location`, created with a password
    /// (a remote keychain needs one) and unlocked in a new environment.
    init(remote location: RemoteLocation, kdf: KDFCost = .interactive) throws {
        (directory, environment) = try TemporaryKeychain.makeEnvironment(session: "dir")
        path = location.url
        password = "correct horse"
        remote = location
        try Keychain.createRemote(location, password: secret("correct horse"), kdf: kdf, environment: environment)
    }

    /// A keychain in this process's memory (issue 38), with a password,
    /// unlocked, in a new environment: the third storage of the conformance suites.
    init(memory password: String, kdf: KDFCost = .weakForTests) throws {
        (directory, environment) = try TemporaryKeychain.makeEnvironment(session: "dir")
        path = "memory:" + directory
        self.password = password
        inMemory = true
        try MemoryKeychains.create(path, password: secret(password), kdf: kdf, environment: environment)
    }

    /// Another machine of the remote keychain at `location`: a new
    /// environment (device secret, session), nothing unlocked.
    init(joining location: RemoteLocation) throws {
        (directory, environment) = try TemporaryKeychain.makeEnvironment(session: "dir")
        path = location.url
        password = "correct horse"
        remote = location
    }

    /// A byte copy of `other`'s file in a new environment: another device
    /// (its own device secret), no session, nothing unlocked.
    init(copyOf other: TemporaryKeychain) throws {
        (directory, environment) = try TemporaryKeychain.makeEnvironment(session: "dir")
        path = directory + "/data/locket/copy.keychain"
        password = other.password
        try FileManager.default.createDirectory(atPath: directory + "/data/locket", withIntermediateDirectories: true)
        // Every connection to `other` is closed, so its WAL has been checkpointed into the main file.
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: other.path + suffix) {
            try FileManager.default.copyItem(atPath: other.path + suffix, toPath: path + suffix)
        }
    }

    private static func makeEnvironment(session: String) throws -> (String, Environment) {
        var template = Array((NSTemporaryDirectory() + "/locket-core-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw KeychainError(.io, "mkdtemp failed")
        }
        let directory = String(cString: made)
        chmod(directory, 0o700)
        return (directory, Environment([
            "HOME": directory,
            "XDG_DATA_HOME": directory + "/data",
            "XDG_STATE_HOME": directory + "/state",
            "XDG_RUNTIME_DIR": directory + "/run",
            "LOCKET_SESSION": session,
        ]))
    }

    /// The device secret file of this environment.
    var deviceSecretPath: String { directory + "/state/locket/device.key" }

    /// A fresh Keychain object: keys are loaded at open, so this is how a test
    /// observes what another object (another command) did to the session.
    /// `time`: the clock and sleeper it runs on (a `VirtualClock`'s), else the system's.
    func open(caller: Caller = .owner, acceptRollback: Bool = false, time: TimeSource? = nil) throws -> Keychain {
        var environment = environment
        if let time = time ?? self.time { environment.time = time }
        if let remote { return try Keychain.open(remote: remote, caller: caller, environment: environment, acceptRollback: acceptRollback) }
        if inMemory { return try MemoryKeychains.open(path, caller: caller, environment: environment, acceptRollback: acceptRollback) }
        return try Keychain.open(at: path, caller: caller, environment: environment, acceptRollback: acceptRollback)
    }

    /// Unlocks with the right password through a fresh object, as `locket unlock` would.
    func unlock(timeout: UInt32? = nil, time: TimeSource? = nil) throws {
        guard let password else { return }
        try open(time: time).session.unlock(password: secret(password), timeout: timeout)
    }

    func lock(all: Bool) throws {
        try open().session.lock(all: all)
    }

    /// Leaves nothing behind: no session (keyring or directory), no files.
    /// A remote keychain's machine keeps its session in a directory under
    /// `directory` (LOCKET_SESSION=dir, XDG_RUNTIME_DIR), removed with it:
    /// opening it only to lock would cost a helper process and a server
    /// connection per machine (issue 38).
    func remove(keepDirectory: Bool = false) {
        if remote == nil || keepDirectory, let keychain = try? open() { keychain.session.lock(all: true) }
        if inMemory { MemoryKeychains.remove(path) }
        if !keepDirectory { try? FileManager.default.removeItem(atPath: directory) }
    }
}

// MARK: - Building items and queries

func secret(_ text: String) throws -> SecureBytes { try SecureBytes(copying: Array(text.utf8)) }

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A generic password with service and account (nil: left out) and more attributes.
func genp(_ service: String?, _ account: String?, _ more: [Attribute: String] = [:],
          group: String? = nil, accessible: ProtectionClass? = nil) throws -> NewItem {
    var item = NewItem(itemClass: .genericPassword)
    if let service { try item.set(.service, bytes(service)) }
    if let account { try item.set(.account, bytes(account)) }
    for (attribute, value) in more { try item.set(attribute, bytes(value)) }
    item.accessGroup = group
    item.accessible = accessible
    return item
}

/// An internet password with the given attributes (values already canonical).
func inet(_ attributes: [Attribute: [UInt8]], group: String? = nil, accessible: ProtectionClass? = nil) throws -> NewItem {
    var item = NewItem(itemClass: .internetPassword)
    for (attribute, value) in attributes { try item.set(attribute, value) }
    item.accessGroup = group
    item.accessible = accessible
    return item
}

/// A query over `itemClass` with string equalities.
func query(_ itemClass: ItemClass = .genericPassword, _ equalities: [Attribute: String] = [:], group: String? = nil) throws -> Query {
    var q = Query(itemClass: itemClass)
    for (attribute, value) in equalities.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
        try q.match(attribute, bytes(value))
    }
    q.accessGroup = group
    return q
}

/// A query that names `ref` only.
func query(ref: [UInt8], _ itemClass: ItemClass = .genericPassword) -> Query {
    var q = Query(itemClass: itemClass)
    q.persistentRef = ref
    return q
}

// MARK: - Assertions

/// Asserts that `body` throws a KeychainError with `code` (and its OSStatus).
func XCTAssertKeychainError<T>(_ code: KeychainError.Code, _ body: @autoclosure () throws -> T,
                               _ message: @autoclosure () -> String = "",
                               file: StaticString = #filePath, line: UInt = #line) {
    do {
        let result = try body()
        let summary = (result as? [Item]).map { "\($0.count) item(s)" } ?? "\(result)"
        XCTFail("expected \(code.name), got a result: \(summary) \(message())", file: file, line: line)
    } catch let error as KeychainError {
        XCTAssertEqual(error.code, code, "\(error) \(message())", file: file, line: line)
        XCTAssertEqual(error.status, code.rawValue, file: file, line: line)
    } catch {
        XCTFail("expected \(code.name), got \(error) \(message())", file: file, line: line)
    }
}

extension Item {
    /// A string attribute, for readable assertions.
    func string(_ attribute: Attribute) -> String { String(decoding: self[attribute], as: UTF8.self) }

    var secretString: String? { data.map { String(decoding: $0.bytes, as: UTF8.self) } }
}

/// Moves `clock` on by 5 ms: an item's dates differ from those it had before.
func tick(_ clock: VirtualClock) { clock.advance(milliseconds: 5) }
