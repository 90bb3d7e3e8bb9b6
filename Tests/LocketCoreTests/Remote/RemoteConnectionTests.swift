import Foundation
import LocketCore
import LocketRemote
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// RemoteConnection against a real server: values in and out exactly,
/// TLS verified in full, the password kept out of the helper's argv and
/// environment, errors that name a SQLSTATE and never a value.
final class RemoteConnectionTests: PostgresTestCase {
    func testRoundTripsEveryParameterType() throws {
        let connection = try running().connect()
        let withNULs: [UInt8] = [0, 1, 0, 255, 0, 0x27, 0x5c, 0]
        let rows = try connection.execute("SELECT $1::bytea, $2::text, $3::int8, $4::bool, $5::bytea, $6::bytea, $7::int8, $8::text",
                                          [.bytes(withNULs), .text("sél'ect \"x\" 🔑"), .int(Int64.min), .bool(true), .bytes([]), .null, .int(Int64.max), .text("")])
        XCTAssertEqual(rows.count, 1)
        XCTAssertEqual(rows[0].values, [.bytes(withNULs), .text("sél'ect \"x\" 🔑"), .int(Int64.min), .bool(true), .bytes([]), .null, .int(Int64.max), .text("")])
    }

    func testMebibyteValuesRoundTrip() throws {
        let connection = try running().connect()
        try connection.execute("CREATE TEMPORARY TABLE big(v bytea)")
        var value = [UInt8](repeating: 0, count: 1 << 20)
        for index in value.indices { value[index] = UInt8(truncatingIfNeeded: index &* 7919 >> 3) }
        try connection.execute("INSERT INTO big(v) VALUES ($1)", [.bytes(value)])
        let rows = try connection.execute("SELECT v, octet_length(v) FROM big")
        XCTAssertEqual(rows.first?[0].bytes, value)
        XCTAssertEqual(rows.first?[1].int, 1 << 20)
    }

    func testValuesLargerThanTheFrameLimitAreRefusedBeforeSending() throws {
        let connection = try running().connect()
        let huge = [UInt8](repeating: 7, count: 18 << 20)
        XCTAssertThrowsError(try connection.execute("SELECT $1::bytea", [.bytes(huge)])) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .dataTooLarge)
        }
        // The connection is still usable.
        XCTAssertEqual(try connection.execute("SELECT 1::int8").first?[0].int, 1)
    }

    func testManyRowsComeBackInOrder() throws {
        let connection = try running().connect()
        let rows = try connection.execute("SELECT g::int8, md5(g::text) FROM generate_series(1, 5000) g ORDER BY g")
        XCTAssertEqual(rows.count, 5000)
        XCTAssertEqual(rows.last?[0].int, 5000)
        XCTAssertEqual(rows.last?["md5"].text?.count, 32)
    }

    func testDuplicateKeyIsErrSecDuplicateItemWithoutTheValue() throws {
        let connection = try running().connect()
        try connection.execute("CREATE TEMPORARY TABLE u(k text UNIQUE)")
        try connection.execute("INSERT INTO u VALUES ($1)", [.text("marker-duplicate-value")])
        XCTAssertThrowsError(try connection.execute("INSERT INTO u VALUES ($1)", [.text("marker-duplicate-value")])) { error in
            let error = error as? KeychainError
            XCTAssertEqual(error?.code, .duplicateItem)
            XCTAssertTrue(error?.description.contains("23505") == true, "\(String(describing: error))")
            XCTAssertFalse(error?.description.contains("marker-duplicate-value") == true, "\(String(describing: error))")
        }
    }

    func testStatementErrorsNameTheSQLState() throws {
        let connection = try running().connect()
        XCTAssertThrowsError(try connection.execute("SELEC 1")) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .io)
            XCTAssertTrue((error as? KeychainError)?.description.contains("42601") == true)
        }
        XCTAssertThrowsError(try connection.execute("SELECT 1 / $1::int8", [.int(0)])) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .param)
            XCTAssertTrue((error as? KeychainError)?.description.contains("22012") == true)
        }
    }

    // MARK: TLS

    func testVerifyFullSucceedsWithTheTestCAByNameAndByAddress() throws {
        let server = try running()
        for host in ["localhost", "127.0.0.1"] {
            let connection = try RemoteConnection(helper: try Postgres.helperPath(), parameters: server.tcpParameters(host: host),
                                                  password: Array(server.password.utf8), environment: Environment([:]))
            let rows = try connection.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            XCTAssertEqual(rows.first?[0].bool, true, "the connection to \(host) is not TLS")
        }
    }

    func testVerifyFullFailsWithAnotherCA() throws {
        let server = try running()
        XCTAssertThrowsError(try RemoteConnection(helper: try Postgres.helperPath(), parameters: server.tcpParameters(ca: server.wrongCACertificate),
                                                  password: Array(server.password.utf8), environment: Environment([:]))) { error in
            let error = error as? KeychainError
            XCTAssertEqual(error?.code, .notAvailable)
            XCTAssertTrue(error?.description.contains("certificate verify failed") == true, "\(String(describing: error))")
        }
    }

    func testVerifyFullFailsForAHostNameTheCertificateDoesNotName() throws {
        let server = try running()
        // hostaddr reaches the right server; the name checked is `host`.
        let parameters = server.tcpParameters(host: "db.example.invalid") + [("hostaddr", "127.0.0.1")]
        XCTAssertThrowsError(try RemoteConnection(helper: try Postgres.helperPath(), parameters: parameters,
                                                  password: Array(server.password.utf8), environment: Environment([:]))) { error in
            let error = error as? KeychainError
            XCTAssertEqual(error?.code, .notAvailable)
            XCTAssertTrue(error?.description.contains("does not match host name") == true, "\(String(describing: error))")
        }
    }

    func testWeakerSSLModesAreRefusedOverTheNetwork() throws {
        let server = try running()
        for mode in ["disable", "prefer", "require", "verify-ca"] {
            XCTAssertThrowsError(try RemoteConnection(helper: try Postgres.helperPath(), parameters: server.tcpParameters() + [("sslmode", mode)],
                                                      password: Array(server.password.utf8), environment: Environment([:]))) { error in
                XCTAssertTrue((error as? KeychainError)?.description.contains("verify-full") == true, "\(mode): \(error)")
            }
        }
        // Nor can PGSSLMODE weaken it: the helper sets verify-full explicitly.
        XCTAssertThrowsError(try RemoteConnection(helper: try Postgres.helperPath(), parameters: server.tcpParameters(ca: server.wrongCACertificate),
                                                  password: Array(server.password.utf8), environment: Environment(["PGSSLMODE": "disable"])))
    }

    /// With no host given, the helper asks for verify-full; libpq ignores
    /// sslmode on a Unix socket, so a socket found through PGHOST still works.
    func testASocketFromPGHOSTConnectsUnderTheDefaultSSLMode() throws {
        let server = try running()
        let connection = try RemoteConnection(helper: try Postgres.helperPath(), parameters: [("dbname", "postgres"), ("user", PostgresServer.user)],
                                              environment: Environment(["PGHOST": server.socket, "PGPORT": String(server.port)]))
        XCTAssertEqual(try connection.execute("SELECT 3::int8").first?[0].int, 3)
    }

    func testTheSocketNeedsNoTLS() throws {
        let rows = try running().connect().execute("SELECT count(*)::int8 FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl")
        XCTAssertEqual(rows.first?[0].int, 0)
    }

    // MARK: Passwords

    func testPasswordFromPGPASSFILEStaysOutOfTheHelpersArgvAndEnvironment() throws {
        let server = try running()
        let passfile = "\(server.root)/client-\(getpid()).pgpass"
        try Data("*:*:*:\(PostgresServer.user):\(server.password)\n".utf8).write(to: URL(fileURLWithPath: passfile))
        chmod(passfile, 0o600)
        let connection = try RemoteConnection(helper: try Postgres.helperPath(), parameters: server.tcpParameters(),
                                              environment: Environment(["PGPASSFILE": passfile, "HOME": server.root, "SECRET_NOT_PASSED": "x"]))
        XCTAssertEqual(try connection.execute("SELECT current_user::text").first?[0].text, PostgresServer.user)
        let pid = try XCTUnwrap(connection.helperProcessID)
        let argv = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))
        let environ = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))
        XCTAssertNil(argv.range(of: Data(server.password.utf8)))
        XCTAssertNil(environ.range(of: Data(server.password.utf8)))
        XCTAssertEqual(String(decoding: argv, as: UTF8.self), "locket-postgres\0")
        // Only libpq's variables are passed on.
        XCTAssertNil(environ.range(of: Data("SECRET_NOT_PASSED".utf8)))
        XCTAssertNotNil(environ.range(of: Data("PGPASSFILE=\(passfile)".utf8)))
    }

    func testPasswordGivenOverTheStreamStaysOutOfTheHelpersArgvAndEnvironment() throws {
        let server = try running()
        let connection = try RemoteConnection(helper: try Postgres.helperPath(), parameters: server.tcpParameters(),
                                              password: Array(server.password.utf8), environment: Environment([:]))
        XCTAssertEqual(try connection.execute("SELECT 2::int8").first?[0].int, 2)
        let pid = try XCTUnwrap(connection.helperProcessID)
        for file in ["cmdline", "environ"] {
            let contents = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/\(file)"))
            XCTAssertNil(contents.range(of: Data(server.password.utf8)), file)
        }
    }

    func testAWrongPasswordIsErrSecAuthFailed() throws {
        let server = try running()
        XCTAssertThrowsError(try RemoteConnection(helper: try Postgres.helperPath(), parameters: server.tcpParameters(),
                                                  password: Array("not-the-password".utf8), environment: Environment([:]))) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .authFailed, "\(error)")
            XCTAssertFalse("\(error)".contains("not-the-password"))
        }
    }

    func testAPasswordKeywordIsRefused() throws {
        let server = try running()
        XCTAssertThrowsError(try RemoteConnection(helper: try Postgres.helperPath(), parameters: server.tcpParameters() + [("password", server.password)],
                                                  environment: Environment([:]))) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .notAvailable)
            XCTAssertFalse("\(error)".contains(server.password))
        }
    }

    func testAMissingHelperIsErrSecNotAvailable() throws {
        let server = try running()
        XCTAssertThrowsError(try RemoteConnection(helper: "\(server.root)/no-such-helper", parameters: server.socketParameters(), environment: Environment([:]))) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .notAvailable)
        }
    }
}
