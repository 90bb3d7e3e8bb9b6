@testable import LocketCLI
import LocketCore
import XCTest

/// Issue 29: what `aws-credential add` reads (the shapes the AWS tools print),
/// what the item holds and what credential_process gets; which
/// ExecCredential version kubectl asks for.
final class CloudCredentialParsingTests: XCTestCase {
    func parse(_ text: String) throws -> AWSCredential { try AWSCredential.parse(input: try SecureBytes(copying: Array(text.utf8))) }

    func output(_ credential: AWSCredential) throws -> String { String(decoding: try credential.processOutput().bytes, as: UTF8.self) }

    func testEveryInputShapeGivesTheSameCredential() throws {
        let expected = #"{"Version":1,"AccessKeyId":"AKIAIOSFODNN7EXAMPLE","SecretAccessKey":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY","SessionToken":"FwoGZXIvYXdzE+/token=","Expiration":"2030-06-01T12:00:00Z"}"#
        let shapes = [
            // credential_process's own answer (aws configure export-credentials, the default format).
            #"{"Version": 1, "AccessKeyId": "AKIAIOSFODNN7EXAMPLE", "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "SessionToken": "FwoGZXIvYXdzE+/token=", "Expiration": "2030-06-01T12:00:00+00:00"}"#,
            // aws sts get-session-token / assume-role.
            #"{"Credentials": {"AccessKeyId": "AKIAIOSFODNN7EXAMPLE", "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "SessionToken": "FwoGZXIvYXdzE+/token=", "Expiration": "2030-06-01T14:00:00.123+02:00"}, "AssumedRoleUser": {"Arn": "x"}}"#,
            // aws configure export-credentials --format env.
            "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nexport AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nexport AWS_SESSION_TOKEN=FwoGZXIvYXdzE+/token=\nexport AWS_CREDENTIAL_EXPIRATION=2030-06-01T12:00:00Z\n",
            // --format env-no-export, quoted as a shell reads it, CRLF.
            "AWS_ACCESS_KEY_ID='AKIAIOSFODNN7EXAMPLE'\r\nAWS_SECRET_ACCESS_KEY=\"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"\r\nAWS_SESSION_TOKEN=FwoGZXIvYXdzE+/token=\r\nAWS_CREDENTIAL_EXPIRATION=2030-06-01T12:00:00Z\r\n",
            // ~/.aws/credentials, one profile.
            "[prod]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\naws_session_token = FwoGZXIvYXdzE+/token=\n# a comment\nAWS_CREDENTIAL_EXPIRATION = 2030-06-01T12:00:00Z\n",
        ]
        for shape in shapes {
            XCTAssertEqual(try output(try parse(shape)), expected, shape)
        }
        // The usual three values, one per line: no expiration to give.
        let lines = try parse("AKIAIOSFODNN7EXAMPLE\nwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nFwoGZXIvYXdzE+/token=\n")
        XCTAssertEqual(try output(lines), #"{"Version":1,"AccessKeyId":"AKIAIOSFODNN7EXAMPLE","SecretAccessKey":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY","SessionToken":"FwoGZXIvYXdzE+/token="}"#)
        XCTAssertEqual(try output(try parse("AKIA1\nsecret1")), #"{"Version":1,"AccessKeyId":"AKIA1","SecretAccessKey":"secret1"}"#)
    }

    func testBadInputIsRefusedNamingWhatIsWrong() {
        func refused(_ text: String, _ message: String, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertThrowsError(try parse(text), file: file, line: line) { error in
                XCTAssertEqual((error as? KeychainError)?.code, .param, file: file, line: line)
                XCTAssertTrue((error as? KeychainError)?.message.contains(message) == true, "\(error)", file: file, line: line)
            }
        }
        refused("", "no AWS credential on standard input")
        refused("\n \n", "no AWS credential on standard input")
        refused("AKIA1\n", "has 1 line")
        refused("a\nb\nc\nd\n", "has 4 lines")
        refused("AKIA1\nsec ret\n", "secret access key has a character that is not printable ASCII")
        refused(#"{"AccessKeyId": "A"}"#, "no SecretAccessKey")
        refused(#"{"SecretAccessKey": "S"}"#, "no AccessKeyId")
        refused(#"{"AccessKeyId": 1, "SecretAccessKey": "S"}"#, "AccessKeyId must be a string")
        refused(#"{"AccessKeyId": "A", "SecretAccessKey": "S", "Expiration": "tomorrow"}"#, "is not an RFC 3339 time")
        refused(#"{"AccessKeyId": "A", "SecretAccessKey": "S"} x"#, "not valid JSON")
        refused("AWS_ACCESS_KEY_ID=A\n", "no AWS_SECRET_ACCESS_KEY")
        refused("AWS_ACCESS_KEY_ID=A\nAWS_SECRET_ACCESS_KEY=S\nregion = eu-west-1\n", "mixes NAME=VALUE lines with other lines")
        refused("[a]\naws_access_key_id=A\naws_secret_access_key=S\n[b]\naws_access_key_id=B\n", "more than one profile")
    }

    /// An item made by hand, security(1)'s way: the key ID in the account, the secret alone.
    func testAnItemMadeByHandHoldsAKey() throws {
        let stored = try AWSCredential.stored(data: try SecureBytes(copying: Array("wJalr/EXAMPLEKEY".utf8)), account: Array("AKIA1".utf8))
        XCTAssertEqual(try output(stored), #"{"Version":1,"AccessKeyId":"AKIA1","SecretAccessKey":"wJalr/EXAMPLEKEY"}"#)
        let json = try parse("AKIA2\nS2\nT2")
        let roundTrip = try AWSCredential.stored(data: try json.itemData(), account: Array("prod".utf8))
        XCTAssertEqual(try output(roundTrip), #"{"Version":1,"AccessKeyId":"AKIA2","SecretAccessKey":"S2","SessionToken":"T2"}"#)
        XCTAssertThrowsError(try AWSCredential.stored(data: try SecureBytes(copying: Array("secret".utf8)), account: [])) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .decode)
        }
        XCTAssertThrowsError(try AWSCredential.stored(data: try SecureBytes(copying: Array("two words".utf8)), account: Array("AKIA".utf8))) { error in
            XCTAssertEqual((error as? KeychainError)?.code, .decode)
        }
    }

    func testTimestamps() {
        XCTAssertEqual(AWSCredential.seconds(ofTimestamp: "1970-01-01T00:00:00Z"), 0)
        XCTAssertEqual(AWSCredential.seconds(ofTimestamp: "1970-01-01T01:00:00+01:00"), 0)
        XCTAssertEqual(AWSCredential.seconds(ofTimestamp: "1969-12-31T19:00:00.5-05:00"), 0)
        XCTAssertEqual(AWSCredential.seconds(ofTimestamp: "2030-06-01t12:00:00z"), 1_906_545_600)
        for bad in ["", "2030-06-01", "2030-06-01T12:00:00", "2030-06-01 12:00:00Z", "2030-13-01T12:00:00Z", "2030-06-01T12:00:00+0100",
                    "2030-06-01T12:00:00.Z", "2030-06-01T12:00:00Zjunk", "２０３０-06-01T12:00:00Z"] {
            XCTAssertNil(AWSCredential.seconds(ofTimestamp: bad), bad)
        }
    }

    func testTheExecCredentialVersionIsKubectls() throws {
        XCTAssertEqual(try ExecCredential.apiVersion(Environment([:])), "client.authentication.k8s.io/v1")
        for version in ExecCredential.versions {
            let info = #"{"kind":"ExecCredential","apiVersion":"\#(version)","spec":{"interactive":false}}"#
            XCTAssertEqual(try ExecCredential.apiVersion(Environment(["KUBERNETES_EXEC_INFO": info])), version)
        }
        for info in [#"{"apiVersion":"client.authentication.k8s.io/v1alpha1"}"#, #"{"kind":"ExecCredential"}"#, "not json", "[]"] {
            XCTAssertThrowsError(try ExecCredential.apiVersion(Environment(["KUBERNETES_EXEC_INFO": info])), info) { error in
                XCTAssertEqual((error as? KeychainError)?.code, .param)
            }
        }
        let token = try ExecCredential.token(try SecureBytes(copying: Array("eyJhbGciOi.x\"y".utf8)), apiVersion: ExecCredential.versions[1])
        XCTAssertEqual(String(decoding: token.bytes, as: UTF8.self),
                       #"{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"eyJhbGciOi.x\"y"}}"#)
        for bad in ["", "two\nlines", "tab\there"] {
            XCTAssertThrowsError(try ExecCredential.token(try SecureBytes(copying: Array(bad.utf8)), apiVersion: ExecCredential.versions[0]), bad)
        }
    }
}
