import LocketCore
import LocketRemote
import XCTest

/// The "machines" of an engine test on a remote keychain (SPEC §17): each a
/// `TemporaryKeychain` with its own environment (device secret, session)
/// on one database of the run's shared server. `Machines` is the command
/// line's counterpart. Every machine made is removed by `removeAll()`, which
/// a suite calls from `tearDown`.
final class RemoteMachines {
    private var made: [TemporaryKeychain] = []
    /// What each device's enrolment printed as its fingerprint, by id.
    var fingerprints: [Int64: String] = [:]

    /// A new database of the shared server, as a location (over the
    /// socket): locket's schema and no keychain, or with `empty`, nothing.
    static func newLocation(empty: Bool = false) throws -> RemoteLocation { try Postgres.newKeychainLocation(empty: empty) }

    /// A keychain created on a first machine in a new database; the machine, the location and the database's name.
    /// At locket's floor by default: another machine (`joining`, `enrolled`) can't
    /// authenticate the header before the hash, so it refuses anything cheaper,
    /// and so does this one after `lock(all:)`. A test where only this machine
    /// ever unlocks passes `.weakForTests` (a tenth of a CPU-second less).
    func created(kdf: KDFCost = .interactive) throws -> (machine: TemporaryKeychain, location: RemoteLocation, database: String) {
        let location = try Self.newLocation()
        let database = try XCTUnwrap(location.value("dbname"))
        return (try kept(TemporaryKeychain(remote: location, kdf: kdf)), location, database)
    }

    /// Another machine of the keychain at `location`: nothing unlocked.
    func joining(_ location: RemoteLocation) throws -> TemporaryKeychain {
        try kept(TemporaryKeychain(joining: location))
    }

    /// Another machine, unlocked and enrolled as `name`; with `admin`,
    /// approved by it for `groups`. The machine and its device id.
    /// Unlocked and enrolled through one Keychain object, as one process
    /// would: a second open was a helper process and a server connection
    /// more per machine (issue 38).
    func enrolled(_ location: RemoteLocation, name: String = "machine", approvedBy admin: TemporaryKeychain? = nil,
                  groups: [String] = [Keychain.defaultAccessGroup]) throws -> (machine: TemporaryKeychain, id: Int64) {
        let machine = try joining(location)
        let keychain = try machine.open()
        try keychain.session.unlock(password: secret(try XCTUnwrap(machine.password)), timeout: nil)
        let enrolment = try keychain.remote!.enroll(name: name)
        fingerprints[enrolment.id] = enrolment.fingerprint
        if let admin { try approve(admin, enrolment.id, groups: groups) }
        return (machine, enrolment.id)
    }

    /// `admin` approves device `id` with the fingerprint its enrolment printed.
    func approve(_ admin: TemporaryKeychain, _ id: Int64, groups: [String]) throws {
        try admin.open().remote!.approve(device: id, groups: groups, fingerprint: fingerprints[id] ?? "")
    }

    /// Locks and deletes every machine made.
    func removeAll() {
        for machine in made { machine.remove() }
        made = []
    }

    private func kept(_ machine: TemporaryKeychain) -> TemporaryKeychain {
        made.append(machine)
        return machine
    }
}
