/// What a test needs and this machine lacks (a PostgreSQL server, a tool),
/// with what to install. This target has no XCTest (`swift build` builds it
/// too): each test target turns it into XCTSkip where it calls the support.
public struct TestUnavailable: Error, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) { self.reason = reason }

    public var description: String { reason }
}
