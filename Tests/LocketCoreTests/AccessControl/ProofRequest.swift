@testable import LocketCore
import XCTest

/// What proof `body` asked for (SPEC §14): the request of the
/// errSecInteractionNotAllowed `.proofNeeded` it threw; nil when it threw
/// nothing or something else (a different status fails the test).
func proofRequest(_ body: @autoclosure () throws -> Any?, file: StaticString = #filePath, line: UInt = #line) -> AccessRequest? {
    do {
        _ = try body()
    } catch let error as KeychainError {
        XCTAssertEqual(error.code, .interactionNotAllowed, error.description, file: file, line: line)
        if case .proofNeeded(let request)? = error.reason { return request }
    } catch {}
    return nil
}
