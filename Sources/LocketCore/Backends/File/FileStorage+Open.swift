import Glibc
import LocketSupport

extension FileStorage {
    /// The file at `path`, checked (the user's own private regular file) and
    /// its header read: the keybag and meta rows, checked for the format and
    /// a sane identity. With `keepOpen` the connection stays open.
    static func open(_ path: String, keepOpen: Bool) throws -> (FileStorage, StoredHeader) {
        guard FileIO.exists(path) else {
            throw KeychainError(.noSuchKeychain, "no keychain at \(path)", reason: .noKeychain(path: path))
        }
        if try FileIO.checkPrivateFile(path, what: "keychain") {
            try Database.claimCompanions(of: path)
        }
        let db = try Database(path: path, create: false)
        let header: Header
        do {
            header = try db.transaction(write: false, keepOpen: keepOpen) { try MetaStore.read(db) }
        } catch let error as KeychainError where error.code == .io {
            // "no such table" and friends: a SQLite file, but not a keychain.
            throw KeychainError(.invalidKeychain, "\(path) is not a locket keychain")
        }
        let meta = header.meta
        guard let encoded = meta[.format], encoded.count == 8, case let format = BigEndian.int64(encoded), format >= 1 else {
            throw KeychainError(.invalidKeychain, "\(path) is not a locket keychain")
        }
        // Refused before anything is written: a newer release's file is never touched.
        guard format <= Schema.format else {
            throw KeychainError(.invalidKeychain, "\(path) is a keychain of format \(format), newer than this locket knows (\(Schema.format))",
                                reason: .newerFormat(format))
        }
        guard let id = meta[.id], id.count == 16 else { throw KeychainError(.decode, "\(path) has a damaged header") }
        var kdf: KDFParameters?
        if let encoded = meta[.kdf] {
            guard let parameters = KDFParameters(encoded: encoded) else {
                throw KeychainError(.decode, "\(path) has damaged password-hash parameters")
            }
            kdf = parameters
        }
        return (FileStorage(database: db, format: format),
                StoredHeader(keybag: Keybag(keychainID: id, kdf: kdf, rows: header.keybag), meta: meta))
    }
}
