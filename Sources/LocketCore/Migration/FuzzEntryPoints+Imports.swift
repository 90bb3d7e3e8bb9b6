/// Fuzzing only (`fuzz/`, target FuzzImports): the readers of files users
/// hand to `import`. Each must return or throw KeychainError, never crash.
extension FuzzEntryPoints {
    /// A backup's header, then records decoded from the bytes after it as
    /// if they had authenticated (the reader's parser of decrypted chunks).
    public static func decodeBackup(_ bytes: [UInt8]) {
        _ = try? BackupHeader.read(from: BackupInput(bytes: bytes))
        bytes.withUnsafeBytes { _ = try? BackupRecordCoding.decode($0, number: 1) }
        // A whole backup under a fixed recipient key: header, key search, first chunk.
        if let reader = try? BackupReader(bytes: bytes) {
            _ = try? reader.open(secretKey: SecureBytes(count: BackupRecipients.keyBytes))
            while (try? reader.next()) != nil {}
        }
    }

    /// An export in one of the migration formats (not pass, which is a directory).
    public static func readMigration(_ format: MigrationFormat, _ bytes: [UInt8]) {
        _ = try? Migration.read(format, SecureBytes(copying: bytes)) { _ in }
    }
}
