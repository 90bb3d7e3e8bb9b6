import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 29, points 3 and 4, with the real clients: the AWS CLI (version 2,
/// Debian's `awscli`) with the README's profile, whose `credential_process`
/// runs `locket aws-credential`; kubectl (KubeCredentialEndToEndTests).
/// `locket` is found on PATH, as the README's examples find it.
class CloudCredentialEndToEndCase: EndToEndCase {
    /// A directory with `locket` (a link to the binary under test), first on the tools' PATH.
    func toolEnvironment(_ extra: [String: String] = [:]) throws -> [String: String] {
        let bin = sandbox.root + "/bin"
        if !fileExists(bin) {
            XCTAssertEqual(mkdir(bin, 0o755), 0)
            try FileManager.default.createSymbolicLink(atPath: bin + "/locket", withDestinationPath: binary)
        }
        return extra.merging(["PATH": bin + ":/usr/local/bin:/usr/bin:/bin"]) { $1 }
    }
}

final class AWSCredentialEndToEndTests: CloudCredentialEndToEndCase {
    /// Version 2's `aws configure export-credentials` (Debian's awscli is 2.9).
    func awsCLI() throws -> String {
        if access("/usr/bin/aws", X_OK) == 0 { return "/usr/bin/aws" }
        let aws = try SystemTool.require("aws", for: "the AWS CLI test (Debian package awscli)")
        guard runTool(aws, ["--version"], timeout: 60).out.hasPrefix("aws-cli/2") else {
            throw XCTSkip("the AWS CLI on PATH is not version 2 (no 'aws configure export-credentials'); Debian's awscli is")
        }
        return aws
    }

    func export(_ aws: String, profile: String) throws -> RunResult {
        runTool(aws, ["configure", "export-credentials", "--profile", profile],
                environment: try toolEnvironment(["AWS_EC2_METADATA_DISABLED": "true", "AWS_SHARED_CREDENTIALS_FILE": sandbox.root + "/no-credentials"]),
                timeout: 60)
    }

    func testTheAWSCLIGetsExactlyTheStoredCredential() throws {
        let aws = try awsCLI()
        initKeychain()
        let readme = try ServicesReadme.load()
        XCTAssertTrue(readme.awsProfile.contains("credential_process = locket aws-credential"), readme.awsProfile)
        XCTAssertEqual(mkdir(sandbox.home + "/.aws", 0o700), 0)
        writeFile(sandbox.home + "/.aws/config", readme.awsProfile)
        let profile = try XCTUnwrap(readme.awsProfile.firstMatch(of: /\[profile ([a-z]+)\]/).map { String($0.output.1) })

        // The README's way to store the usual two values, as it stands.
        let store = try XCTUnwrap(readme.shellLines.first { $0.contains("aws-credential add") && $0.hasPrefix("printf") })
        let keyID = "AKIAIOSFODNN7EXAMPLE", secretKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
        let stored = runTool("/bin/sh", ["-c", store], environment: try toolEnvironment(["AWS_ACCESS_KEY_ID": keyID, "AWS_SECRET_ACCESS_KEY": secretKey]))
        XCTAssertEqual(stored.status, 0, stored.summary)
        // What the profile's credential_process prints for them (the CLI is asked below, once).
        XCTAssertEqual(ok("aws-credential", "-s", "aws", "-a", profile).out,
                       #"{"Version":1,"AccessKeyId":"\#(keyID)","SecretAccessKey":"\#(secretKey)"}"# + "\n")

        // Temporary credentials, as `aws sts` prints them: the token and the expiration come back too.
        let token = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ+token="
        let sts = #"{"Credentials": {"AccessKeyId": "ASIAEXAMPLE", "SecretAccessKey": "temporary/secret", "SessionToken": "\#(token)", "Expiration": "2031-03-04T05:06:07+00:00"}}"#
        ok("aws-credential", "add", "-s", "aws", "-a", profile, "-U", input: .text(sts))
        var exported = try export(aws, profile: profile)
        XCTAssertEqual(exported.status, 0, exported.summary)
        let credential = try exported.jsonObject()
        XCTAssertEqual(credential["Version"] as? Int, 1)
        XCTAssertEqual(credential["AccessKeyId"] as? String, "ASIAEXAMPLE")
        XCTAssertEqual(credential["SecretAccessKey"] as? String, "temporary/secret")
        XCTAssertEqual(credential["SessionToken"] as? String, token)
        let expiration = try XCTUnwrap(credential["Expiration"] as? String)
        XCTAssertEqual(ISO8601DateFormatter().date(from: expiration), ISO8601DateFormatter().date(from: "2031-03-04T05:06:07Z"), expiration)

        // Locked: the CLI fails, and says why in locket's words.
        ok("lock")
        exported = try export(aws, profile: profile)
        XCTAssertNotEqual(exported.status, 0, exported.summary)
        XCTAssertEqual(exported.out, "")
        XCTAssertTrue(exported.err.contains("Error when retrieving credentials from custom-process: locket: error: the keychain is locked"), exported.err)
        XCTAssertTrue(exported.err.contains("; run 'locket unlock' (errSecInteractionNotAllowed -25308)"), exported.err)
        XCTAssertFalse(exported.err.contains("locket: hint:"), "one line, the hint in it: \(exported.err)")
    }
}

/// `aws-credential` itself, in-process: the item layout, and what it refuses.
final class AWSCredentialCommandTests: EndToEndCase {
    override class var inProcess: Bool { true }

    override func setUpWithError() throws {
        try super.setUpWithError()
        initKeychain()
    }

    func testTheItemLayout() throws {
        ok("aws-credential", "add", "-s", "aws", "-a", "prod", input: .text("AKIA1\nsecret/1\n"))
        let item = try ok("--json", "find", "-s", "aws", "-a", "prod", "-g").jsonObject()
        XCTAssertEqual(item["description"] as? String, "AWS access key")
        XCTAssertEqual(item["label"] as? String, "aws")
        XCTAssertEqual(item["data"] as? String, #"{"AccessKeyId":"AKIA1","SecretAccessKey":"secret/1"}"#)
        XCTAssertEqual(ok("aws-credential", "-s", "aws", "-a", "prod").out, #"{"Version":1,"AccessKeyId":"AKIA1","SecretAccessKey":"secret/1"}"# + "\n")
        // Added again: a duplicate, unless -U.
        expect(45, "aws-credential", "add", "-s", "aws", "-a", "prod", input: .text("AKIA2\nsecret/2\n"))
        ok("aws-credential", "add", "-s", "aws", "-a", "prod", "-U", input: .text("AKIA2\nsecret/2\n"))
        ok("aws-credential", "add", "-s", "aws", "-a", "server", "--accessible", "after-first-unlock", input: .text("AKIA5\nsecret/5\n"))
        XCTAssertEqual(try ok("--json", "find", "-s", "aws", "-a", "server").jsonObject()["accessible"] as? String, "after-first-unlock")
        XCTAssertEqual(ok("aws-credential", "-s", "aws", "-a", "prod").out, #"{"Version":1,"AccessKeyId":"AKIA2","SecretAccessKey":"secret/2"}"# + "\n")
        // An item made by hand: the key ID as its account, the secret key as its secret.
        add("-s", "legacy", "-a", "AKIA3", secret: "secret/3")
        XCTAssertEqual(ok("aws-credential", "-s", "legacy").out, #"{"Version":1,"AccessKeyId":"AKIA3","SecretAccessKey":"secret/3"}"# + "\n")
        add("-s", "blank", "-a", "AKIA4", secret: "not one word")
        let notAWS = expect(93, "aws-credential", "-s", "blank")
        XCTAssertTrue(notAWS.err.contains("the item does not hold an AWS credential"), notAWS.err)
        XCTAssertFalse(notAWS.err.contains("not one word"))
    }

    /// The AWS CLI shows the process's whole stderr after "Error when
    /// retrieving credentials from custom-process:": one line, a usage error's too.
    private func assertOneLineUsage(_ result: RunResult, mentions: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 2, result.summary, file: file, line: line)
        XCTAssertEqual(result.errLines.count, 1, result.summary, file: file, line: line)
        let only = result.errLines.first ?? ""
        XCTAssertTrue(only.hasPrefix("locket: error: ") && only.contains(mentions) && only.hasSuffix("(see 'locket help aws-credential')"),
                      result.summary, file: file, line: line)
    }

    func testRefusals() {
        assertOneLineUsage(locket("aws-credential"), mentions: "name the item")
        assertOneLineUsage(locket("aws-credential", "add", input: .text("A\nS\n")), mentions: "name the item")
        assertOneLineUsage(locket("aws-credential", "-s", "aws", "-U"), mentions: "-U/--update is for aws-credential add")
        assertOneLineUsage(locket("aws-credential", "add", "-s", "aws", "--ref", "00"), mentions: "--ref is for reading")
        assertOneLineUsage(locket("aws-credential", "remove", "-s", "aws"), mentions: "takes no operand but add")
        assertOneLineUsage(locket("aws-credential", "-s", "aws", "--bogus"), mentions: "--bogus")
        assertError(expect(44, "aws-credential", "-s", "missing"), "errSecItemNotFound", -25300)
        // An idle stdin (a CI job's) fails instead of hanging.
        let idle = expect(36, "aws-credential", "add", "-s", "aws", "-a", "idle", input: .silentPipe)
        XCTAssertTrue(idle.err.contains("no AWS credential on standard input and no terminal to ask at"), idle.err)
        let expired = #"{"AccessKeyId": "A", "SecretAccessKey": "S", "Expiration": "2001-01-01T00:00:00Z"}"#
        let refused = expect(206, "aws-credential", "add", "-s", "aws", "-a", "old", input: .text(expired))
        XCTAssertTrue(refused.err.contains("the AWS credential expired at 2001-01-01T00:00:00Z; nothing was stored"), refused.err)
        expect(44, "find", "-s", "aws", "-a", "old")
        // Stored before it expired (here by hand): refused when asked for, not handed to the SDK.
        add("-s", "aws", "-a", "stale", secret: expired)
        let late = expect(53, "aws-credential", "-s", "aws", "-a", "stale")
        XCTAssertTrue(late.err.contains("the AWS credential in the item expired at 2001-01-01T00:00:00Z"), late.err)
        ok("aws-credential", "add", "-s", "aws", "-a", "locked", input: .text("A\nS\n"))
        ok("lock")
        assertError(expect(36, "aws-credential", "-s", "aws", "-a", "locked"), "errSecInteractionNotAllowed", -25308)
    }

    /// Issue 44, point 13: every failure is one line on stderr, as the man
    /// page and README promise, the hint folded into it (the status stays
    /// last); and the input limit is named in the unit it is (64 KiB, not "0 MiB").
    func testEveryFailureIsOneLineAndTheInputLimitIsNamedInKiB() {
        func assertOneLine(_ result: RunResult, _ name: String, _ status: Int32, hint: String? = nil,
                           file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertEqual(result.errLines.count, 1, "one line on stderr: \(result.summary)", file: file, line: line)
            assertError(result, name, status, file: file, line: line)
            if let hint { XCTAssertTrue(result.err.contains("; \(hint) (\(name) \(status))"), result.summary, file: file, line: line) }
        }
        let large = locket(["aws-credential", "add", "-s", "aws", "-a", "large"], input: .bytes([UInt8](repeating: 0x41, count: 200_000)))
        assertOneLine(large, "errSecDataTooLarge", -25302)
        XCTAssertTrue(large.err.contains("the AWS credential is larger than 64 KiB"), large.summary)
        let expired = #"{"AccessKeyId": "A", "SecretAccessKey": "S", "Expiration": "2001-01-01T00:00:00Z"}"#
        add("-s", "aws", "-a", "stale", secret: expired)
        assertOneLine(expect(53, "aws-credential", "-s", "aws", "-a", "stale"), "errSecNotAvailable", -25291,
                      hint: "store a fresh one with 'locket aws-credential add -U' and the same attributes")
        assertOneLine(expect(36, "aws-credential", "add", "-s", "aws", "-a", "idle", input: .silentPipe), "errSecInteractionNotAllowed", -25308,
                      hint: "pipe it in: aws configure export-credentials --profile OLD | locket aws-credential add ...")
        ok("aws-credential", "add", "-s", "aws", "-a", "locked", input: .text("A\nS\n"))
        ok("lock")
        assertOneLine(expect(36, "aws-credential", "-s", "aws", "-a", "locked"), "errSecInteractionNotAllowed", -25308, hint: "run 'locket unlock'")
        let missingKeychain = locket(["-k", sandbox.root + "/none.keychain", "aws-credential", "-s", "aws"])
        assertOneLine(missingKeychain, "errSecNoSuchKeychain", -25294)
        // kubectl shows an exec plugin's stderr too: the same one line.
        assertOneLine(expect(36, "kube-credential", "-s", "aws", "-a", "locked"), "errSecInteractionNotAllowed", -25308, hint: "run 'locket unlock'")
        // Other commands keep the hint on a line of its own.
        XCTAssertEqual(expect(36, "find", "-s", "aws", "-a", "locked", "-w").errLines.count, 2)
    }
}
