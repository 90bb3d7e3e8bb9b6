import LocketSupport

/// What a password opened, held between `Keychain.verify(password:)` and
/// `Keychain.unlock(verified:)`; its keys are wiped when it is dropped.
public final class VerifiedPassword {
    let kek: SecureBytes
    let keys: SessionKeys

    init(kek: SecureBytes, keys: SessionKeys) {
        self.kek = kek
        self.keys = keys
    }
}
