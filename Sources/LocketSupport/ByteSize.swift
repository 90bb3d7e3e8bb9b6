/// A size as a message says it, in the unit that makes sense: whole GiB,
/// MiB or KiB when it is a whole number of them (`64 KiB`, `16 MiB`), else
/// bytes (`4097 bytes`). The one way locket words a size or a size limit,
/// so that a limit of 64 KiB is never "0 MiB".
public enum ByteSize {
    public static func text(_ bytes: Int) -> String {
        // Not a loop over (unit, name) pairs: swiftc 6.3's SIL loop unroller
        // gave such a loop's two exit values their block arguments in an order
        // that changed from one compilation to the next, so two builds of one
        // commit differed (docs/PACKAGING.md "Reproducible").
        whole(bytes, shift: 30, "GiB") ?? whole(bytes, shift: 20, "MiB") ?? whole(bytes, shift: 10, "KiB")
            ?? (bytes == 1 ? "1 byte" : "\(bytes) bytes")
    }

    private static func whole(_ bytes: Int, shift: Int, _ name: String) -> String? {
        let unit = 1 << shift
        return bytes >= unit && bytes % unit == 0 ? "\(bytes >> shift) \(name)" : nil
    }
}
