import CDBus
import Glibc
import LocketCore
import LocketSupport

/// Locking with the session (SPEC §20): what the provider does with
/// logind's events (Logind.swift). Each served keychain locks (its
/// when-unlocked keys, as `locket lock`) unless its settings say otherwise
/// (`settings --lock-on-sleep no`, `--lock-on-screen-lock no`); a
/// collection that was unlocked says Locked changed, so that clients caching
/// the property see it.
extension Provider {
    /// Starts listening to logind; the loop polls `logind.descriptor`.
    public func watchLogind() {
        logind = Logind.connect(log: log)
    }

    /// The loop's turn for the system bus: what came is read and acted on.
    func serviceLogind() {
        guard let watcher = logind else { return }
        guard let events = watcher.service() else {
            logind = nil
            return
        }
        for event in events {
            switch event {
            case .sleep:
                lockCollections(on: .sleep, because: "the machine is about to sleep")
                // Locked: the machine may sleep now.
                watcher.releaseInhibitor()
            case .screenLock(let session):
                lockCollections(on: .screenLock, because: "the screen of session \(session.split(separator: "/").last ?? "") locked")
            }
        }
    }

    /// Locks every served keychain whose setting for `event` is on.
    func lockCollections(on event: KeychainSession.LockEvent, because reason: String) {
        // The session collection has no password to lock with.
        for collection in collections.values.filter({ $0.session == nil }).sorted(by: { $0.name < $1.name }) {
            let keychain: Keychain
            do {
                keychain = try Keychain.open(at: collection.keychainPath, environment: environment, extendSession: false, acceptRollback: true)
            } catch let error as KeychainError where error.code == .noSuchKeychain {
                continue
            } catch {
                log("cannot lock \(collection.name): \(error)")
                continue
            }
            guard keychain.hasPassword, keychain.session.locks(on: event) else { continue }
            let wasUnlocked = keychain.session.isUnlocked
            keychain.session.lock(all: false)
            guard wasUnlocked else { continue }
            log("locked \(collection.name): \(reason)")
            propertiesChanged(collection.path, Provider.collectionInterface, ["Locked"])
        }
    }
}
