import Glibc
import LocketCore
import LocketSupport

/// An AWS access key as the SDKs' `credential_process` takes it ("Sourcing
/// credentials with an external process"): an access key ID, a secret access
/// key, and for temporary credentials a session token and an expiration.
///
/// The item that holds one (`locket aws-credential add`) is a generic
/// password whose secret is a JSON object with the process's own keys,
/// `{"AccessKeyId": ..., "SecretAccessKey": ..., "SessionToken": ...,
/// "Expiration": ...}` (the last two only when known). An item made by hand
/// the way `security add-generic-password` users keep a key, with the
/// access key ID as its account and the secret access key as its secret,
/// works too.
struct AWSCredential {
    var accessKeyID: [UInt8]
    var secretAccessKey: SecureBytes
    var sessionToken: SecureBytes?
    /// RFC 3339, UTC, to the second: `2030-01-01T00:00:00Z`.
    var expiration: String?

    /// The longest input `add` reads: a session token is a few kilobytes.
    static let maximumInput = 64 * 1024

    /// The description (kind) `add` gives the items it makes, as `find` shows it.
    static let kind = "AWS access key"

    // MARK: - Reading

    /// What `add` reads on standard input, in any of the shapes the AWS
    /// tools print: a JSON object (credential_process's, or `aws sts ...`'s
    /// `{"Credentials": {...}}`); `NAME=VALUE` lines (`aws configure
    /// export-credentials --format env`, `export` optional) or the
    /// credentials file's `name = value` lines, names in either case; or
    /// the values alone, one per line: access key ID, secret access key,
    /// and a session token if there is one.
    static func parse(input: SecureBytes) throws -> AWSCredential {
        let first = input.withUnsafeBytes { raw in raw.first { ![0x20, 0x09, 0x0a, 0x0d].contains($0) } }
        guard let first else { throw KeychainError(.param, "no AWS credential on standard input") }
        if first == UInt8(ascii: "{") { return try parse(json: input) }
        return try parse(lines: input)
    }

    private static func parse(json input: SecureBytes) throws -> AWSCredential {
        let document: JSONValue
        do { document = try JSONValue.parse(input, options: JSONValue.Options(maximumDepth: 8)) } catch let error as KeychainError {
            throw KeychainError(.param, "the AWS credential is not valid JSON: \(error.message)")
        }
        // `aws sts get-session-token` and `assume-role` wrap it.
        let object = document.lastMember(matching: "Credentials").flatMap { $0.isObject ? $0 : nil } ?? document
        guard object.isObject else { throw KeychainError(.param, "the AWS credential must be a JSON object") }
        func text(_ key: String) throws -> SecureBytes? {
            guard let value = object.lastMember(matching: key) else { return nil }
            guard value.isString else { throw KeychainError(.param, "\(key) must be a string") }
            let bytes = try value.secure(in: input)
            return bytes.count == 0 ? nil : bytes
        }
        guard let keyID = try text("AccessKeyId") else { throw KeychainError(.param, "the AWS credential has no AccessKeyId") }
        guard let secret = try text("SecretAccessKey") else { throw KeychainError(.param, "the AWS credential has no SecretAccessKey") }
        return try AWSCredential(accessKeyID: keyID.bytes, secretAccessKey: secret, sessionToken: text("SessionToken"),
                                 expiration: text("Expiration").map { try normalize(expiration: String(decoding: $0.bytes, as: UTF8.self)) })
            .validated()
    }

    private static func parse(lines input: SecureBytes) throws -> AWSCredential {
        var named: [String: SecureBytes] = [:]
        var values: [SecureBytes] = []
        var sections = 0
        try input.withUnsafeBytes { raw in
            for line in raw.split(separator: 0x0a) {
                var line = trim(line)
                guard !line.isEmpty, line.first != UInt8(ascii: "#"), line.first != UInt8(ascii: ";") else { continue }
                if line.first == UInt8(ascii: "[") {
                    sections += 1
                    guard sections == 1 else { throw KeychainError(.param, "standard input holds more than one profile; give one") }
                    continue
                }
                if line.starts(with: "export ".utf8) { line = trim(line.dropFirst(7)) }
                guard let equals = line.firstIndex(of: UInt8(ascii: "=")),
                      let name = String(validating: trim(line[..<equals]), as: UTF8.self),
                      name.uppercased().hasPrefix("AWS_") else {
                    values.append(try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: line)))
                    continue
                }
                var value = trim(line[(equals + 1)...])
                // `export NAME='value'` as a shell would read it.
                if value.count >= 2, let quote = value.first, quote == UInt8(ascii: "'") || quote == UInt8(ascii: "\""), value.last == quote {
                    value = value.dropFirst().dropLast()
                }
                named[name.uppercased()] = try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: value))
            }
        }
        if !named.isEmpty {
            guard values.isEmpty else { throw KeychainError(.param, "standard input mixes NAME=VALUE lines with other lines") }
            guard let keyID = named["AWS_ACCESS_KEY_ID"] else { throw KeychainError(.param, "standard input has no AWS_ACCESS_KEY_ID") }
            guard let secret = named["AWS_SECRET_ACCESS_KEY"] else { throw KeychainError(.param, "standard input has no AWS_SECRET_ACCESS_KEY") }
            return try AWSCredential(accessKeyID: keyID.bytes, secretAccessKey: secret, sessionToken: named["AWS_SESSION_TOKEN"],
                                     expiration: named["AWS_CREDENTIAL_EXPIRATION"].map { try normalize(expiration: String(decoding: $0.bytes, as: UTF8.self)) })
                .validated()
        }
        guard (2...3).contains(values.count) else {
            throw KeychainError(.param, "standard input has \(values.count) line\(values.count == 1 ? "" : "s"); expected the access key ID, the secret access key and, for temporary credentials, the session token, one per line")
        }
        return try AWSCredential(accessKeyID: values[0].bytes, secretAccessKey: values[1], sessionToken: values.count == 3 ? values[2] : nil,
                                 expiration: nil).validated()
    }

    /// The credential an item holds: its secret as `add` stores it, or an
    /// access key ID in its account and the secret access key as its secret.
    static func stored(data: SecureBytes, account: [UInt8]) throws -> AWSCredential {
        let isJSON = data.withUnsafeBytes { raw in raw.first { ![0x20, 0x09, 0x0a, 0x0d].contains($0) } == UInt8(ascii: "{") }
        if isJSON {
            do { return try parse(json: data) } catch let error as KeychainError {
                throw KeychainError(.decode, "the item does not hold an AWS credential: \(error.message)")
            }
        }
        guard !account.isEmpty else {
            throw KeychainError(.decode, "the item does not hold an AWS credential: its secret is not the JSON 'aws-credential add' stores, and it has no account to take for the access key ID")
        }
        do {
            return try AWSCredential(accessKeyID: account, secretAccessKey: data, sessionToken: nil, expiration: nil).validated()
        } catch let error as KeychainError {
            throw KeychainError(.decode, "the item does not hold an AWS credential: \(error.message)")
        }
    }

    /// Every value is one word of printable ASCII, as AWS issues them.
    private func validated() throws -> AWSCredential {
        func check(_ raw: UnsafeRawBufferPointer, _ name: String) throws {
            guard raw.count > 0 else { throw KeychainError(.param, "the \(name) is empty") }
            guard raw.allSatisfy({ (0x21...0x7e).contains($0) }) else {
                throw KeychainError(.param, "the \(name) has a character that is not printable ASCII (a blank, a line break, a control character)")
            }
        }
        try accessKeyID.withUnsafeBytes { try check($0, "access key ID") }
        try secretAccessKey.withUnsafeBytes { try check($0, "secret access key") }
        try sessionToken?.withUnsafeBytes { try check($0, "session token") }
        return self
    }

    // MARK: - Writing

    /// The item's secret: the JSON object `stored` reads.
    func itemData() throws -> SecureBytes { try json(version: false) }

    /// What credential_process prints: `Version` 1 and the credential.
    func processOutput() throws -> SecureBytes { try json(version: true) }

    private func json(version: Bool) throws -> SecureBytes {
        var w = JSONWriter()
        // Sized up front: growing would free a block holding part of the secret unwiped.
        w.reserve(accessKeyID.count + secretAccessKey.count + (sessionToken?.count ?? 0) + 256)
        defer { w.reset() }
        w.beginObject()
        if version { w.key("Version"); w.int(1) }
        w.key("AccessKeyId"); w.string(utf8: accessKeyID)
        w.key("SecretAccessKey"); secretAccessKey.withUnsafeBytes { w.string(utf8: $0) }
        if let sessionToken { w.key("SessionToken"); sessionToken.withUnsafeBytes { w.string(utf8: $0) } }
        if let expiration { w.key("Expiration"); w.string(expiration) }
        w.endObject()
        return try w.bytes.withUnsafeBytes { try SecureBytes(copying: $0) }
    }

    // MARK: - Expiration

    /// Seconds since 1970 of an RFC 3339 / ISO 8601 time with seconds and a
    /// zone (`Z` or `+HH:MM`), as AWS writes expirations; nil otherwise.
    static func seconds(ofTimestamp text: String) -> Int64? {
        let b = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int32? {
            guard from + count <= b.count, b[from..<from + count].allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            return Int32(String(decoding: b[from..<from + count], as: UTF8.self))
        }
        guard b.count >= 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"),
              b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
              let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
              let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var i = 19
        if i < b.count && b[i] == UInt8(ascii: ".") {
            i += 1
            let digits = i
            while i < b.count && (0x30...0x39).contains(b[i]) { i += 1 }
            guard i > digits else { return nil }
        }
        var offset: Int64 = 0
        if i == b.count - 1 && (b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z")) {
            i += 1
        } else if i + 6 == b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-"), b[i + 3] == UInt8(ascii: ":"),
                  let hours = number(i + 1, 2), let minutes = number(i + 4, 2), hours < 24, minutes < 60 {
            offset = (Int64(hours) * 3600 + Int64(minutes) * 60) * (b[i] == UInt8(ascii: "+") ? 1 : -1)
            i += 6
        } else {
            return nil
        }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        return Int64(timegm(&parts)) - offset
    }

    /// An expiration as locket stores and prints it: UTC, to the second.
    static func normalize(expiration text: String) throws -> String {
        guard let seconds = seconds(ofTimestamp: text) else {
            throw KeychainError(.param, "the expiration '\(Printable.clip(text, max: 40))' is not an RFC 3339 time (2030-01-01T00:00:00Z)")
        }
        return AuditTime.format(seconds * 1_000_000)
    }

    private static func trim(_ bytes: UnsafeRawBufferPointer.SubSequence) -> UnsafeRawBufferPointer.SubSequence {
        var s = bytes
        while let first = s.first, first == 0x20 || first == 0x09 || first == 0x0d { s = s.dropFirst() }
        while let last = s.last, last == 0x20 || last == 0x09 || last == 0x0d { s = s.dropLast() }
        return s
    }
}
