import Foundation
import XCTest

/// The JSON contract of issue 13: keys, certificates and identities, with
/// the exact key set and JSON type of every value, documented in the man page.
extension EndToEndJSONContractTests {
    static let keyItem: [String: String] = [
        "class": "string", "label": "string", "applicationTag": "string", "keyClass": "string", "type": "string",
        "keySizeInBits": "number", "effectiveKeySize": "number", "applicationLabel": "string", "extractable": "bool",
        "canSign": "bool", "canVerify": "bool", "canEncrypt": "bool", "canDecrypt": "bool", "canDerive": "bool",
        "canWrap": "bool", "canUnwrap": "bool", "creator": "string", "startDate": "number", "endDate": "number",
        "comment": "string", "tokenID": "string", "accessGroup": "string", "accessible": "string", "creationDate": "string",
        "modificationDate": "string", "persistentRef": "string",
    ]
    static let certificateItem: [String: String] = [
        "class": "string", "label": "string", "alias": "string", "subjectName": "string", "issuerName": "string",
        "serialNumber": "string", "sha256Fingerprint": "string", "publicKeyHash": "string", "subjectKeyID": "string",
        "notBefore": "number", "notAfter": "number", "certificateType": "number", "certificateEncoding": "number",
        "subject": "string", "issuer": "string", "comment": "string", "accessGroup": "string", "accessible": "string",
        "creationDate": "string", "modificationDate": "string", "persistentRef": "string",
    ]
    static let identity: [String: String] = ["class": "string", "label": "string", "certificate": "object", "key": "object"]
    static let keyFileReport: [String: String] = ["format": "string", "imported": "number", "existing": "number", "items": "array"]

    func testKeysCertificatesAndIdentities() throws {
        makeKey("p256", "j.key")
        makeLeaf(key: "j.key", cert: "j.pem", cn: "json.example.com")
        XCTAssertTrue(FileManager.default.createFile(atPath: key("j.both"), contents: Data(keyFileBytes("j.key") + keyFileBytes("j.pem"))))
        let report = try json("import", key("j.both"), "--tag", "json")
        assertShape(report, Self.keyFileReport)
        let key = try json("find", "--class", "keys", "--tag", "json")
        assertShape(key, Self.keyItem)
        XCTAssertEqual(key.object?["class"], .string("keys"))
        XCTAssertEqual(key.object?["keySizeInBits"], .number(256))
        XCTAssertEqual(key.object?["extractable"], .bool(true))
        let certificate = try json("find", "--class", "cert", "--label", "json.example.com")
        assertShape(certificate, Self.certificateItem)
        XCTAssertEqual(certificate.object?["publicKeyHash"], key.object?["applicationLabel"])
        let identity = try json("find", "--class", "identity", "--tag", "json")
        assertShape(identity, Self.identity)
        XCTAssertEqual(identity.object?["class"], .string("idnt"))
        if let nested = identity.object?["certificate"] { assertShape(nested, Self.certificateItem) }
        if let nested = identity.object?["key"] { assertShape(nested, Self.keyItem) }
        XCTAssertEqual(try json("find", "--class", "identity", "--all").array?.count, 1)
        assertShape(try json("key", "public", "--tag", "json"), ["publicKey": "string", "item": "object"])
        for item in try XCTUnwrap(try json("dump").array) {
            let shape = item.object?["class"] == .string("keys") ? Self.keyItem : Self.certificateItem
            assertShape(item, shape.merging(["status": "string"]) { $1 })
        }
    }

    func testManPageJSONSectionNamesEveryKeyOfKeysAndCertificates() throws {
        let man = try String(contentsOfFile: LocketBinary.repositoryRoot + "/man/locket.1", encoding: .utf8)
        let section = man.components(separatedBy: ".SH JSON\n")[1].components(separatedBy: "\n.SH ")[0]
        let names = Set(Self.keyItem.keys).union(Self.certificateItem.keys).union(Self.identity.keys).union(Self.keyFileReport.keys)
            .union(["sha256Fingerprint", "publicKey", "added"])
        for name in names.sorted() {
            let lines = section.split(separator: "\n")
            let bold = lines.contains { $0 == ".B \(name)" || $0.hasPrefix(".BR \(name) ") || $0.hasPrefix(".B \(name) ") }
                || section.contains("\\fB\(name)\\f") || section.contains("\"\(name)\"")
                || lines.contains { $0.hasPrefix(".BR {") && $0.contains("\(name)") }
            XCTAssertTrue(bold, "the JSON section of man/locket.1 does not name \(name)")
        }
    }
}
