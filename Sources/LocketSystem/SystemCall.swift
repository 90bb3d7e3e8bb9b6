import Glibc

// Every system call locket makes from Swift goes through the functions here,
// as swift-system's do (its internal `valueOrErrno(retryOnInterrupt:)`):
// errno is read in one place, EINTR is retried in one place, and a failure
// comes back as a typed `Errno`. Before, each caller read errno itself, some
// after another call had changed it, and retried EINTR in its own loop.

/// The error a system call reported in `errno`.
public struct Errno: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The errno value (EIO, ENOENT, ...).
    public let code: Int32

    /// The error `code`, as returned by calls that give it rather than set errno (posix_spawn).
    @inlinable
    public init(_ code: Int32) { self.code = code }

    /// strerror(3) of the code, for a message ("No such file or directory");
    /// for EFBIG also where the limit most likely comes from.
    public var description: String {
        let text = String(cString: strerror(code))
        // "File too large" alone sends people looking at the file.
        return code == EFBIG ? text + " (past the file size limit, ulimit -f, or the largest file the file system holds)" : text
    }
}

/// Test hook: when set, every wrapped system call first asks it, by the C
/// function's name ("read", "open", ...), for an errno to fail with instead
/// of making the call (nil: make it). Only in debug builds, which the tests
/// use: the release binary has no such switch, and nothing outside the
/// process (no environment variable) can set it.
#if DEBUG
nonisolated(unsafe) public var systemCallFailureTestHook: ((StaticString) -> Int32?)?
#endif

/// Calls `call`, a system call that returns -1 and sets errno when it fails
/// (the corresponding C contract of read, write, open, ...). With
/// `retryOnInterrupt`, a call a signal interrupted (EINTR) is made again.
/// `name` is the C function's name, for `systemCallFailureTestHook`.
@inlinable @inline(__always)
public func valueOrErrno<I: FixedWidthInteger>(_ name: StaticString, retryOnInterrupt: Bool = true,
                                               _ call: () -> I) -> Result<I, Errno> {
    while true {
        #if DEBUG
        if let hook = systemCallFailureTestHook, let code = hook(name) {
            if retryOnInterrupt && code == EINTR { continue }
            return .failure(Errno(code))
        }
        #endif
        let value = call()
        guard value == -1 else { return .success(value) }
        let failure = errno
        if retryOnInterrupt && failure == EINTR { continue }
        return .failure(Errno(failure))
    }
}

/// `valueOrErrno` for a call whose success value means nothing (close, fsync, rename, ...).
@inlinable @inline(__always)
public func nothingOrErrno<I: FixedWidthInteger>(_ name: StaticString, retryOnInterrupt: Bool = true,
                                                 _ call: () -> I) -> Result<Void, Errno> {
    valueOrErrno(name, retryOnInterrupt: retryOnInterrupt, call).map { _ in () }
}

/// Calls `call`, a C function that returns NULL and sets errno when it fails
/// (getcwd, realpath, mkdtemp, opendir, ...). Never retried: none of them
/// is interrupted by a signal.
@inlinable @inline(__always)
public func pointerOrErrno<T>(_ name: StaticString, _ call: () -> T?) -> Result<T, Errno> {
    #if DEBUG
    if let hook = systemCallFailureTestHook, let code = hook(name) { return .failure(Errno(code)) }
    #endif
    if let value = call() { return .success(value) }
    return .failure(Errno(errno))
}

extension Result where Failure == Errno {
    /// The value, or the error `wrap` makes of the errno (a KeychainError with the path).
    @inlinable
    public func get<E: Error>(or wrap: (Errno) -> E) throws(E) -> Success {
        switch self {
        case .success(let value): return value
        case .failure(let failure): throw wrap(failure)
        }
    }

    /// The errno of a failure; nil on success.
    @inlinable
    public var error: Errno? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
