import Glibc
import LocketCore
import LocketSupport

extension Commands {
    /// `locket docker-credential store|get|erase|list|version`, also run as
    /// `docker-credential-locket` (docker's `credsStore`/`credHelpers` set to
    /// `locket`), over internet passwords.
    static func dockerCredential(_ invocation: Invocation, _ context: Context) throws -> Int32 {
        func fail(_ message: String) -> Int32 {
            context.out.line(message)
            return 1
        }
        guard invocation.operands.count == 1, let action = invocation.operands.first else {
            return fail("usage: docker-credential-locket store|get|erase|list|version")
        }
        do {
            switch action {
            case "store": try dockerStore(context)
            case "get": try dockerGet(context)
            case "erase": try dockerErase(context)
            case "list": try dockerList(context)
            case "version": context.out.line("docker-credential-locket (locket) \(CommandTable.version)")
            default: return fail("docker-credential-locket: unknown action: \(action.prefix(40))")
            }
            return 0
        } catch let failure as DockerCredential.Failure {
            return fail(failure.message)
        } catch let error as KeychainError where error.code == .itemNotFound {
            return fail(DockerCredential.notFound)
        } catch let error as KeychainError {
            if let hint = Hints.hint(for: error, context) { context.err("locket: hint: \(hint)") }
            return fail("locket: \(error.description)")
        }
    }

    /// The request on standard input, whole.
    private static func dockerRequest(_ context: Context) throws -> SecureBytes {
        try Prompt.readAll(context.io.stdin, what: "standard input", limit: DockerCredential.maximumSize)
    }

    /// The server URL that `get` and `erase` read, trimmed as the helpers trim it.
    private static func dockerServerURL(_ context: Context) throws -> (text: String, url: DockerCredential.ServerURL) {
        let request = try dockerRequest(context).bytes
        let text = String(decoding: request, as: UTF8.self).trimmingBlanks()
        guard !text.isEmpty else { throw DockerCredential.Failure(message: DockerCredential.missingServerURL) }
        return (text, try DockerCredential.ServerURL(parsing: text))
    }

    private static func dockerStore(_ context: Context) throws {
        let request = try dockerRequest(context)
        let credentials = try DockerCredential.parseStore(request)
        // As given: docker's Store trims nothing, and "  host" is no host.
        let url = try DockerCredential.ServerURL(parsing: credentials.serverURL)
        var item = NewItem(itemClass: .internetPassword)
        let query = try url.query()
        for (attribute, value) in query.attributes { try item.set(attribute, value) }
        try item.set(.account, Array(credentials.username.utf8))
        try item.set(.label, Array(DockerCredential.label.utf8))
        let keychain = try context.openKeychain()
        // One login per registry, as docker expects: another user's docker
        // credential for this URL is replaced. Items locket did not store
        // for docker (a git credential for the same host) are left alone.
        var labelled = query
        try labelled.match(.label, Array(DockerCredential.label.utf8))
        let existing = (try? keychain.search(labelled, limit: .all)) ?? []
        for old in existing where old[.account] != Array(credentials.username.utf8) {
            var exact = Query(itemClass: .internetPassword)
            exact.persistentRef = old.persistentRef
            exact.accessGroup = old.accessGroup
            try keychain.delete(exact)
        }
        try keychain.add(item, data: credentials.secret, updateExisting: true)
    }

    private static func dockerGet(_ context: Context) throws {
        let (text, url) = try dockerServerURL(context)
        let keychain = try context.openKeychain()
        guard let item = try AccessPrompt.run(keychain, nil, context, { try keychain.search(url.query(), limit: .one, returnData: true) }).first,
              let secret = item.data else {
            throw KeychainError(.itemNotFound)
        }
        // JSON strings are text: a binary secret can't be handed to docker.
        guard secret.withUnsafeBytes({ UTF8Check.isValid($0, allowingNUL: false) }), item[.account].withUnsafeBytes({ UTF8Check.isValid($0, allowingNUL: false) }) else {
            throw DockerCredential.Failure(message: "the stored credentials are not text and can't be given to docker")
        }
        var w = JSONWriter()
        // Sized up front: growing would free a block holding part of the secret unwiped.
        w.reserve(secret.count * 6 + item[.account].count * 6 + 256)
        w.beginObject()
        w.key("ServerURL"); w.string(text)
        w.key("Username"); w.string(utf8: item[.account])
        w.key("Secret"); secret.withUnsafeBytes { w.string(utf8: $0) }
        w.endObject()
        context.out.bytes(w.bytes)
        context.out.text("\n")
        w.reset()
    }

    private static func dockerErase(_ context: Context) throws {
        let url = try dockerServerURL(context).url
        let keychain = try context.openKeychain()
        // Nothing to erase is no failure, as with the secretservice helper:
        // `logout` twice must not fail (skopeo 1.9 crashes on that answer).
        do {
            try keychain.delete(url.query())
        } catch let error as KeychainError where error.code == .itemNotFound {}
    }

    private static func dockerList(_ context: Context) throws {
        var query = Query(itemClass: .internetPassword)
        try query.match(.label, Array(DockerCredential.label.utf8))
        let keychain = try context.openKeychain()
        let items: [Item]
        do {
            items = try keychain.search(query, limit: .all)
        } catch let error as KeychainError where error.code == .itemNotFound {
            items = []
        }
        var w = JSONWriter()
        w.beginObject()
        for item in items {
            w.key(DockerCredential.ServerURL.text(of: item))
            w.string(utf8: item[.account])
        }
        w.endObject()
        context.out.bytes(w.bytes)
        context.out.text("\n")
    }
}
