import LocketCore
import LocketSupport

/// kubectl's exec credential plugins (client-go, "client-go credential
/// plugins"): kubectl runs the plugin with `KUBERNETES_EXEC_INFO` holding an
/// `ExecCredential` request whose `apiVersion` is the kubeconfig's, and
/// reads an `ExecCredential` of that version on standard output: a bearer
/// token, or a client certificate and its key, both PEM.
enum ExecCredential {
    /// The versions locket answers, newest first: v1 (kubectl 1.22 and later)
    /// and v1beta1 (1.11 and later).
    static let versions = ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"]

    /// The longest KUBERNETES_EXEC_INFO read (it may carry the cluster's CA).
    static let maximumInfo = 1 << 20

    /// The apiVersion kubectl asks for; v1 when the variable is unset (the
    /// plugin run by hand).
    static func apiVersion(_ environment: Environment) throws -> String {
        guard let info = try environment["KUBERNETES_EXEC_INFO"], !info.isEmpty else { return versions[0] }
        guard info.utf8.count <= maximumInfo else { throw KeychainError(.param, "KUBERNETES_EXEC_INFO is larger than \(ByteSize.text(maximumInfo))") }
        let input = try SecureBytes(copying: Array(info.utf8))
        let document: JSONValue
        do { document = try JSONValue.parse(input, options: JSONValue.Options(maximumDepth: 32)) } catch let error as KeychainError {
            throw KeychainError(.param, "KUBERNETES_EXEC_INFO is not an ExecCredential: \(error.message)")
        }
        guard document.isObject, let value = document.lastMember(matching: "apiVersion"), value.isString else {
            throw KeychainError(.param, "KUBERNETES_EXEC_INFO is not an ExecCredential: it has no apiVersion")
        }
        let version = String(decoding: value.bytes(in: input), as: UTF8.self)
        guard versions.contains(version) else {
            throw KeychainError(.param, "kubectl asks for \(Printable.clip(version, max: 80)); locket answers \(versions.joined(separator: " and "))",
                                hint: "set the kubeconfig's exec apiVersion to \(versions[0]) (kubectl 1.22 and later) or \(versions[1])")
        }
        return version
    }

    /// An ExecCredential with a bearer token. The token goes into an HTTP
    /// header: it must be one line of printable text.
    static func token(_ token: SecureBytes, apiVersion: String) throws -> SecureBytes {
        guard token.count > 0 else { throw KeychainError(.param, "the item's secret is empty: no token to give kubectl") }
        try token.withUnsafeBytes { raw in
            guard UTF8Check.isValid(raw, allowingNUL: false), !raw.contains(where: { $0 < 0x20 || $0 == 0x7f }) else {
                throw KeychainError(.param, "the item's secret is not a token kubectl can send (a line break, a control character or invalid UTF-8)")
            }
        }
        return try document(apiVersion: apiVersion, capacity: token.count) { w in
            w.key("token"); token.withUnsafeBytes { w.string(utf8: $0) }
        }
    }

    /// An ExecCredential with a client certificate (the leaf, then its
    /// chain) and the private key (PKCS#8), both PEM.
    static func clientCertificate(_ certificates: String, key: SecureBytes, apiVersion: String) throws -> SecureBytes {
        try document(apiVersion: apiVersion, capacity: certificates.utf8.count + key.count) { w in
            w.key("clientCertificateData"); w.string(certificates)
            w.key("clientKeyData"); key.withUnsafeBytes { w.string(utf8: $0) }
        }
    }

    private static func document(apiVersion: String, capacity: Int, _ status: (inout JSONWriter) -> Void) throws -> SecureBytes {
        var w = JSONWriter()
        // Sized up front: growing would free a block holding part of the secret unwiped.
        w.reserve(2 * capacity + 256)
        defer { w.reset() }
        w.beginObject()
        w.key("apiVersion"); w.string(apiVersion)
        w.key("kind"); w.string("ExecCredential")
        w.key("status"); w.beginObject()
        status(&w)
        w.endObject()
        w.endObject()
        return try w.bytes.withUnsafeBytes { try SecureBytes(copying: $0) }
    }
}
