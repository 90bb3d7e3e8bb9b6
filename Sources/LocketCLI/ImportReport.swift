import Glibc
import LocketCore
import LocketSupport

/// The counts `import` prints, and why each entry was not imported (never a secret).
struct ImportReport {
    var added = 0
    var renumbered = 0
    var updated = 0
    var existing = 0
    var notPermitted: [String: Int] = [:]
    /// Entries not imported: where from, and why.
    var skipped: [(entry: String, reason: String)] = []
    /// Imported, with something left out.
    var notes: [(entry: String, reason: String)] = []
    /// Migration: each item's origin, by position.
    var origins: [String] = []

    mutating func count(_ item: ImportedItem, _ outcome: ImportOutcome, origin: String? = nil) {
        switch outcome {
        case .added: added += 1
        case .addedWithNewReference: added += 1; renumbered += 1
        case .updated: updated += 1
        case .existing:
            existing += 1
            if let origin { skipped.append((origin, "an item with the same primary key exists (add -U to update it)")) }
        case .notPermitted: notPermitted[item.accessGroup ?? "", default: 0] += 1
        }
    }

    /// Entries not imported, in the order met.
    var skippedCount: Int { skipped.count + notPermitted.values.reduce(0, +) + (origins.isEmpty ? existing : 0) }

    /// Text: one line per entry not imported (and per note), then the counts. JSON: one object.
    func print(_ context: Context) {
        if context.json {
            var w = JSONWriter()
            w.beginObject()
            w.key("imported"); w.int(Int64(added))
            w.key("updated"); w.int(Int64(updated))
            w.key("existing"); w.int(Int64(existing))
            w.key("skipped"); w.int(Int64(skippedCount))
            w.key("newReferences"); w.int(Int64(renumbered))
            for (name, list) in [("skippedEntries", skipped), ("notes", notes)] {
                w.key(name)
                w.beginArray()
                for (entry, reason) in list {
                    w.beginObject()
                    w.key("entry"); w.string(entry)
                    w.key("reason"); w.string(reason)
                    w.endObject()
                }
                w.endArray()
            }
            w.key("otherAccessGroups")
            w.beginObject()
            for (group, n) in notPermitted.sorted(by: { $0.key < $1.key }) { w.key(group); w.int(Int64(n)) }
            w.endObject()
            w.endObject()
            context.out.line(w.result)
            return
        }
        for (entry, reason) in skipped { context.out.line("skipped " + Printable.escape("\(entry): \(reason)", backslashes: false)) }
        for (entry, reason) in notes { context.out.line("note: " + Printable.escape("\(entry): \(reason)", backslashes: false)) }
        for (group, n) in notPermitted.sorted(by: { $0.key < $1.key }) {
            context.out.line("skipped \(n) item\(n == 1 ? "" : "s") of access group \(Printable.clip(group)): not one of this app's groups")
        }
        var summary = "imported \(added) item\(added == 1 ? "" : "s")"
        if updated > 0 { summary += ", updated \(updated)" }
        summary += ", skipped \(skippedCount)"
        if existing > 0 { summary += " (\(existing) already in the keychain\(updated == 0 ? "; -U updates them" : ""))" }
        if renumbered > 0 { summary += "; \(renumbered) got a new persistent reference (theirs was taken)" }
        context.out.line(summary)
    }
}
