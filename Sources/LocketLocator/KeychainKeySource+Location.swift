import LocketCore

extension KeychainKeySource {
    /// Keys from the keychain at `location`, opened afresh for every request
    /// (for a remote keychain: its helper, its connection and its database
    /// password, every time; `maxStale` as `Keychain.open(_:...)` takes it).
    public init(location: KeychainLocation, caller: Caller, environment: Environment, maxStale: Int64? = nil) {
        self.init(path: location.description, caller: caller) { extendSession in
            try Keychain.open(location, caller: caller, environment: environment, extendSession: extendSession, maxStale: maxStale)
        }
    }
}
