import LocketCore

/// The values of a SecItem dictionary as Apple's code writes them: a Swift
/// `String` or a `CFString`, `Data` or `CFData`, `true`, `kCFBooleanTrue` or
/// an `NSNumber`, an `Int` literal, and any of them wrapped in an Optional
/// (`kCFBooleanTrue` is `CFBoolean!`, so a dictionary literal may hold it
/// as `Optional<CFBoolean>`).
enum Value {
    /// `value` without the Optionals around it; nil for a nil one.
    static func unwrapped(_ value: Any) -> Any? {
        guard let optional = value as? AnyOptional else { return value }
        return optional.wrappedValue.flatMap(unwrapped)
    }

    static func string(_ value: Any) -> String? {
        // A key of a bridged dictionary is an NSString: tried first, it is the cheaper cast.
        if let text = value as? NSString { return text as String }
        if let text = value as? String { return text }
        if let text = value as? Substring { return String(text) }
        return isOptional(value) ? unwrapped(value).flatMap(string) : nil
    }

    /// Bytes: Data or CFData, `[UInt8]`, or a string as UTF-8 (an
    /// application tag is often given as one).
    static func bytes(_ value: Any) -> [UInt8]? {
        if let data = value as? Data { return Array(data) }
        if let data = value as? NSData { return Array(data as Data) }
        if let bytes = value as? [UInt8] { return bytes }
        if let text = string(value) { return Array(text.utf8) }
        return isOptional(value) ? unwrapped(value).flatMap(bytes) : nil
    }

    /// A secret's bytes without copying them where they are Data already
    /// (a string is taken as its UTF-8, as Apple's API takes one).
    static func dataObject(_ value: Any) -> Data? {
        if let data = value as? Data { return data }
        if let data = value as? NSData { return data as Data }
        if let bytes = value as? [UInt8] { return Data(bytes) }
        if let text = string(value) { return Data(text.utf8) }
        return isOptional(value) ? unwrapped(value).flatMap(dataObject) : nil
    }

    /// Only bytes (Data, CFData, `[UInt8]`), not a string.
    static func data(_ value: Any) -> [UInt8]? {
        if let data = value as? Data { return Array(data) }
        if let data = value as? NSData { return Array(data as Data) }
        if let bytes = value as? [UInt8] { return bytes }
        return isOptional(value) ? unwrapped(value).flatMap(data) : nil
    }

    static func bool(_ value: Any) -> Bool? {
        if let flag = value as? Bool { return flag }
        if let number = value as? NSNumber { return number.boolValue }
        if let n = value as? Int { return n != 0 }
        if let text = string(value) {
            switch text.lowercased() {
            case "1", "true", "yes": return true
            case "0", "false", "no": return false
            default: return nil
            }
        }
        return isOptional(value) ? unwrapped(value).flatMap(bool) : nil
    }

    static func integer(_ value: Any) -> Int? {
        if let n = value as? Int { return n }
        if let number = value as? NSNumber { return number.intValue }
        if let n = value as? UInt32 { return Int(n) }
        if let n = value as? Int32 { return Int(n) }
        if let n = value as? UInt16 { return Int(n) }
        if let n = value as? UInt { return Int(exactly: n) }
        if let n = value as? Int64 { return Int(n) }
        if let text = string(value), let n = Int(text) { return n }
        return isOptional(value) ? unwrapped(value).flatMap(integer) : nil
    }

    static func date(_ value: Any) -> Date? {
        if let date = value as? Date { return date }
        if let date = value as? NSDate { return date as Date }
        return isOptional(value) ? unwrapped(value).flatMap(date) : nil
    }

    private static func isOptional(_ value: Any) -> Bool { value is AnyOptional }

    /// errSecParam naming the key whose value is not of the type it takes.
    static func wrongType(_ key: String, _ expected: String) -> KeychainError {
        KeychainError(.param, "the value of \(key) must be \(expected)")
    }
}

/// Any Optional, whatever it wraps: how a value in an `Any` is told to be one.
private protocol AnyOptional {
    var wrappedValue: Any? { get }
}

extension Optional: AnyOptional {
    var wrappedValue: Any? { map { $0 as Any } }
}
