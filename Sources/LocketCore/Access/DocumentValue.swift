/// An entitlements document as the parsers in this folder return it (JSON,
/// XML and binary property lists): only what entitlements can use keeps its
/// contents; numbers, booleans, dates, data, sets and UIDs are `other`.
enum DocumentValue: Equatable, Sendable {
    /// A string, with its escapes or entities already decoded.
    case string(String)
    /// An array, in order.
    case array([DocumentValue])
    /// A dictionary with string keys. Which of two equal keys a parser keeps
    /// is its format's business (see each parser).
    case dictionary([String: DocumentValue])
    /// JSON's `null` or a binary property list's null object.
    case null
    /// Any other value, checked for well-formedness and then forgotten.
    case other

    /// The deepest nesting of arrays and dictionaries accepted, counting the
    /// outermost. Real entitlements nest two deep; the parsers recurse, so
    /// the limit keeps hostile input from overflowing the stack. 512 is where
    /// Foundation's JSONDecoder, which locket used before, stopped.
    static let maximumDepth = 512
}

/// A document that is not well-formed in its format. Carries no detail: the
/// caller words one message per format ("malformed: not a valid ...").
struct MalformedDocument: Error {}

/// The value of an ASCII decimal digit.
func decimalDigit(_ byte: UInt8) -> UInt32? {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? UInt32(byte - UInt8(ascii: "0")) : nil
}
