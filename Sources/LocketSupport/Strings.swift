// The standard library's `firstRange(of:)`, `split(separator:)` with a
// collection for separator and `contains(_:)` of a string all come from
// _StringProcessing, and any one call links its regex engine into the static
// executable: 1.5 MB more to read on a cold start (bench/README.md "Start-up").
extension Collection where Element: Equatable {
    /// Where `other` first occurs, element by element (`Character`s in a
    /// string); nil for an empty `other`, which nothing here searches for.
    @inlinable
    public func firstRange<Other: Collection>(matching other: Other) -> Range<Index>? where Other.Element == Element {
        guard !other.isEmpty else { return nil }
        var start = startIndex
        while true {
            var i = start
            var j = other.startIndex
            while j != other.endIndex, i != endIndex, self[i] == other[j] {
                formIndex(after: &i)
                other.formIndex(after: &j)
            }
            if j == other.endIndex { return start..<i }
            guard start != endIndex else { return nil }
            formIndex(after: &start)
        }
    }

    /// Whether `other` occurs in this collection.
    @inlinable
    public func contains<Other: Collection>(occurrenceOf other: Other) -> Bool where Other.Element == Element {
        firstRange(matching: other) != nil
    }
}

extension String {
    /// Every occurrence of `target` (not empty) replaced by `replacement`, left to right.
    public func replacing(every target: String, with replacement: String) -> String {
        var out = ""
        var rest = self[...]
        while let range = rest.firstRange(matching: target) {
            out.append(contentsOf: rest[..<range.lowerBound])
            out.append(replacement)
            rest = rest[range.upperBound...]
        }
        out.append(contentsOf: rest)
        return out
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and line breaks (Go's strings.TrimSpace, for ASCII).
    public func trimmingBlanks() -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else { return "" }
        return String(self[first...last])
    }
}

extension Array where Element == String {
    /// `joined(separator:)`, concrete. The standard library's generic one is
    /// not specialized into locket, and its first call resolves `String`'s
    /// associated types at run time: ~0.2 M instructions, a tenth of a `find`.
    public func joined(with separator: String) -> String {
        var out = ""
        for (i, part) in enumerated() {
            if i > 0 { out += separator }
            out += part
        }
        return out
    }
}
