import LocketCore

/// How the engine's errors reach Apple's calling conventions: an OSStatus
/// result (SecItem, SecPKCS12Import, SecIdentity), or a CFError in the
/// NSOSStatusErrorDomain through the `Unmanaged<CFError>` out-parameter of
/// the SecKey functions, with the engine's message as its description.
enum Status {
    /// The OSStatus of `error`.
    static func of(_ error: Error) -> OSStatus {
        (error as? KeychainError)?.status ?? errSecInternalComponent
    }

    /// A CFError for `error`.
    static func cfError(_ error: Error) -> CFError {
        let message = (error as? KeychainError)?.description ?? "unexpected failure: \(error)"
        return NSError(domain: NSOSStatusErrorDomain, code: Int(of(error)), userInfo: [NSLocalizedDescriptionKey: message])
    }
}

/// Runs `body`; errSecSuccess, or the OSStatus of what it threw.
func withStatus(_ body: () throws -> Void) -> OSStatus {
    do {
        try body()
        return errSecSuccess
    } catch {
        return Status.of(error)
    }
}

/// Runs `body`; its result, or nil with `error` (when given) set to a
/// retained CFError for what it threw, as Apple's functions do.
func withError<T>(_ error: UnsafeMutablePointer<Unmanaged<CFError>?>?, _ body: () throws -> T) -> T? {
    do {
        return try body()
    } catch let thrown {
        error?.pointee = Unmanaged.passRetained(Status.cfError(thrown))
        return nil
    }
}
