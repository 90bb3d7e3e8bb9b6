import LocketSupport

/// The rules Go's net/url applies to the authority of a URL, which is how
/// docker's helpers read a server URL (docker-credential-helpers'
/// registryurl.Parse is url.Parse behind a `//`): a host is what they say
/// it is or the URL is refused, so no helper answers for a host the caller
/// did not name (`  host`, `host<TAB>`, `h%2eost`).
extension DockerCredential.ServerURL {
    /// The host, its escapes undone, as Go's unescape in host mode does:
    /// letters, digits, `-._~`, the sub-delimiters and `<>"` as they are;
    /// bytes from 0x80 as they are; `%XX` only for such a byte (or `%25`);
    /// any other ASCII character refuses the URL.
    static func hostName(_ host: Substring) throws -> String {
        // Go's rules decide what may stand in a host; PercentEncoding undoes the escapes.
        let bytes = Array(host.utf8)
        var i = 0
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "%") {
                guard i + 2 < bytes.count, let high = hexDigit(bytes[i + 1]), hexDigit(bytes[i + 2]) != nil else {
                    throw DockerCredential.Failure(message: "invalid URL escape \"\(String(decoding: bytes[i..<min(i + 3, bytes.count)], as: UTF8.self))\"")
                }
                let escape = String(decoding: bytes[i..<i + 3], as: UTF8.self)
                // In a host, an escape may stand only for a byte that is not ASCII (RFC 3986 §3.2.2), or for % (RFC 6874).
                guard high >= 8 || escape == "%25" else { throw DockerCredential.Failure(message: "invalid URL escape \"\(escape)\"") }
                i += 3
                continue
            }
            guard c >= 0x80 || isHostCharacter(c) else {
                throw DockerCredential.Failure(message: "invalid character \"\(String(UnicodeScalar(c)))\" in host name")
            }
            i += 1
        }
        guard let out = PercentEncoding.decodeStrict(bytes), let name = String(validating: out, as: UTF8.self) else {
            throw DockerCredential.Failure(message: "invalid URL escape in host name")
        }
        return name
    }

    /// `:` then digits only (none is a port left empty), as Go's validOptionalPort.
    static func isValidOptionalPort(_ text: Substring) -> Bool {
        text.first == ":" && text.dropFirst().utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// The characters Go's validUserinfo allows before the `@`.
    static func isValidUserinfo(_ text: Substring) -> Bool {
        text.utf8.allSatisfy { c in isAlphanumeric(c) || "-._:~!$&'()*+,;=%@".utf8.contains(c) }
    }

    private static func isHostCharacter(_ c: UInt8) -> Bool {
        isAlphanumeric(c) || "-._~!$&'()*+,;=:[]<>\"".utf8.contains(c)
    }

    private static func isAlphanumeric(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z"))
            || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9"))
    }
}
