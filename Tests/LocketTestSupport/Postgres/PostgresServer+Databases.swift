import Foundation
import LocketCore
import LocketRemote

// The tests' databases: each test works in a database of its own, made over
// one connection the server object keeps for its process (`admin`), not over
// a helper and a backend of their own each time (issue 38).
extension PostgresServer {
    /// The template `makeKeychainDatabase` copies: locket's schema as
    /// `RemoteSchema.prepare` makes it, and no keychain.
    static let keychainTemplate = "locket_schema"

    /// A new, empty database; its name. One lost since its last use (a
    /// private server stopped or restarted) is made again.
    public func makeDatabase() throws -> String {
        try makeDatabase(copying: nil)
    }

    /// A new database with locket's schema in it and no keychain, for a
    /// test that creates one there: a copy of the server's keychain
    /// template, made by the first call of the server's life with the
    /// product's own `RemoteSchema.prepare`. Creating a keychain in an
    /// empty database made the schema first (some 30 statements of DDL): 55
    /// ms of the server's CPU for the database and the keychain, 27-31 from
    /// the template (issue 38). The schema's own making is the tests' of an
    /// empty database (`makeDatabase`, `init` on the command line,
    /// RemoteSchemaTests). Where the template is not made yet (another test
    /// process making it now, or one that died doing so), an empty database.
    public func makeKeychainDatabase() throws -> String {
        try makeDatabase(copying: try keychainTemplateIsMade() ? Self.keychainTemplate : nil)
    }

    /// A new database that is a copy of `source` as it is now (no session
    /// may be connected to it): a test's fixture made once and copied.
    public func copyDatabase(_ source: String) throws -> String {
        try makeDatabase(copying: source)
    }

    private func makeDatabase(copying template: String?) throws -> String {
        let name = "t\(UInt32.random(in: 0...UInt32.max))"
        // CREATE DATABASE takes no parameters; the names are made here, not given.
        let statement = "CREATE DATABASE \(name)" + (template.map { " TEMPLATE \($0)" } ?? "")
        try overAdmin { try $0.execute(statement + Self.copied($0)) }
        return name
    }

    /// Whether the keychain template is there; made here if no test process made it yet.
    private func keychainTemplateIsMade() throws -> Bool {
        if hasKeychainTemplate { return true }
        let found = try overAdmin {
            try $0.execute("SELECT datistemplate FROM pg_database WHERE datname = $1", [.text(Self.keychainTemplate)])
        }
        if let row = found.first {
            // Not yet a template: another process is making it.
            hasKeychainTemplate = row[0].bool == true
            return hasKeychainTemplate
        }
        do {
            try overAdmin { try $0.execute("CREATE DATABASE \(Self.keychainTemplate)" + Self.copied($0)) }
        } catch let error as KeychainError where error.code == .duplicateItem || error.code == .io {
            // Another process made it first, and makes the schema: 42P04, or
            // 23505 (pg_database's unique name) when both made it at once.
            return false
        }
        // No connection to it outlives the schema: CREATE DATABASE refuses a template in use.
        do {
            let schema = try connect(database: Self.keychainTemplate)
            defer { schema.close() }
            try RemoteSchema.prepare(schema)
        }
        try overAdmin { try $0.execute("ALTER DATABASE \(Self.keychainTemplate) IS_TEMPLATE true") }
        hasKeychainTemplate = true
        return true
    }

    /// `body` over the kept connection, made (again) where there is none or it was lost.
    private func overAdmin<T>(_ body: (RemoteConnection) throws -> T) throws -> T {
        adminLock.lock()
        defer { adminLock.unlock() }
        if let admin {
            do {
                return try body(admin)
            } catch let error as KeychainError where error.code == .io || error.code == .notAvailable {
                admin.close()
                self.admin = nil
            }
        }
        let connection = try connect()
        admin = connection
        return try body(connection)
    }

    /// PostgreSQL 15's default strategy writes the whole template (7.5 MB)
    /// through shared buffers into the WAL; FILE_COPY copies its files and
    /// checkpoints: 17 ms of the server's CPU instead of 35 on tmpfs, no WAL
    /// (issue 38). Older servers have only the copy, and no such clause.
    static func copied(_ connection: RemoteConnection) -> String {
        connection.serverVersion >= 150_000 ? " STRATEGY FILE_COPY" : ""
    }
}
