/// A size as a message says it, in the unit that makes sense: whole GiB,
/// MiB or KiB when it is a whole number of them (`64 KiB`, `16 MiB`), else
/// bytes (`4097 bytes`). The one way locket words a size or a size limit,
/// so that a limit of 64 KiB is never "0 MiB".
public enum ByteSize {
    public static func text(_ bytes: Int) -> String {
        for (unit, name) in [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] where bytes >= unit && bytes % unit == 0 {
            return "\(bytes / unit) \(name)"
        }
        return bytes == 1 ? "1 byte" : "\(bytes) bytes"
    }
}
