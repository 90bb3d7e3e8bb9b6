import LocketSupport

/// One-time codes from items whose secret is an otpauth:// URI (SPEC §16).
extension Keychain {
    /// A code and what it was made from.
    public struct OneTimeCode: Sendable {
        public let code: String
        public let kind: OneTimePassword.Kind
        public let algorithm: HMACAlgorithm
        public let digits: Int
        /// TOTP: the time step and the seconds until the next code.
        public let period: UInt64?
        public let secondsLeft: UInt64?
        /// HOTP: the counter this code is for (the item now holds the next one).
        public let counter: UInt64?
    }

    /// The current code of the first item matching `query`. A TOTP item is
    /// only read. An HOTP item's counter advances in the same write
    /// transaction that reads it, so two processes never get the same code
    /// and a failure leaves the counter as it was.
    public func oneTimeCode(_ query: Query, now: Int64) throws -> OneTimeCode {
        let found = try search(query, limit: .one, returnData: true)[0]
        guard let data = found.data else { throw KeychainError(.decode, "an item's secret could not be opened") }
        let first = try OneTimePassword(uri: data)
        if first.kind == .totp {
            let (code, left) = try first.code(at: now)
            return OneTimeCode(code: code, kind: .totp, algorithm: first.algorithm, digits: first.digits,
                               period: first.period, secondsLeft: left, counter: nil)
        }
        var exact = Query(itemClass: query.itemClass)
        exact.persistentRef = found.persistentRef
        exact.accessGroup = found.accessGroup
        return try engine.transaction(write: true) {
            // Read again inside the transaction: another process may have advanced it since.
            guard let item = try engine.rows(exact, limit: .one, data: true).first, let data = item.data else {
                throw KeychainError(.itemNotFound)
            }
            let otp = try OneTimePassword(uri: data)
            guard otp.kind == .hotp else { throw KeychainError(.param, "the item changed from hotp to totp while being read") }
            let code = try otp.code(counter: otp.counter)
            _ = try engine.modify(exact, changes: [:], accessGroup: nil, data: try otp.advanced(), extra: item.extra)
            return OneTimeCode(code: code, kind: .hotp, algorithm: otp.algorithm, digits: otp.digits,
                               period: nil, secondsLeft: nil, counter: otp.counter)
        }
    }
}
