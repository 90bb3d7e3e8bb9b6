import CDBus
import Glibc

/// D-Bus type codes (dbus-protocol.h spells them as casts Swift can't import).
enum DBusType {
    static let invalid: Int32 = 0
    static let byte = Int32(UInt8(ascii: "y"))
    static let boolean = Int32(UInt8(ascii: "b"))
    static let uint32 = Int32(UInt8(ascii: "u"))
    static let uint64 = Int32(UInt8(ascii: "t"))
    static let string = Int32(UInt8(ascii: "s"))
    static let objectPath = Int32(UInt8(ascii: "o"))
    static let signature = Int32(UInt8(ascii: "g"))
    static let array = Int32(UInt8(ascii: "a"))
    static let variant = Int32(UInt8(ascii: "v"))
    static let structure = Int32(UInt8(ascii: "r"))
    static let dictEntry = Int32(UInt8(ascii: "e"))
    static let unixFD = Int32(UInt8(ascii: "h"))
}

/// A message's arguments, read in order through libdbus's iterator: every
/// value is checked for its type, and a wrong one is an `ArgumentError`
/// (the caller's reply is org.freedesktop.DBus.Error.InvalidArgs), never a crash.
struct MessageReader {
    private var iter = DBusMessageIter()
    private var atEnd: Bool

    init(_ message: OpaquePointer) {
        atEnd = dbus_message_iter_init(message, &iter) == 0
    }

    private init(sub: DBusMessageIter) {
        iter = sub
        atEnd = dbus_message_iter_get_arg_type(&iter) == DBusType.invalid
    }

    /// The type of the next argument (`DBusType.invalid` at the end).
    var nextType: Int32 {
        mutating get { atEnd ? DBusType.invalid : dbus_message_iter_get_arg_type(&iter) }
    }

    private mutating func expect(_ type: Int32, _ what: String) throws {
        guard nextType == type else { throw ArgumentError("expected \(what)") }
    }

    private mutating func advance() { atEnd = dbus_message_iter_next(&iter) == 0 }

    mutating func string() throws -> String {
        let type = nextType
        guard type == DBusType.string || type == DBusType.objectPath || type == DBusType.signature else {
            throw ArgumentError("expected a string")
        }
        var pointer: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(&iter, &pointer)
        advance()
        return pointer.map { String(cString: $0) } ?? ""
    }

    mutating func objectPath() throws -> String {
        try expect(DBusType.objectPath, "an object path")
        return try string()
    }

    mutating func uint32() throws -> UInt32 {
        try expect(DBusType.uint32, "a uint32")
        var value: UInt32 = 0
        dbus_message_iter_get_basic(&iter, &value)
        advance()
        return value
    }

    mutating func boolean() throws -> Bool {
        try expect(DBusType.boolean, "a boolean")
        var value: dbus_bool_t = 0
        dbus_message_iter_get_basic(&iter, &value)
        advance()
        return value != 0
    }

    /// A file descriptor passed with the message (`h`): the caller's own copy, to close.
    mutating func unixFD() throws -> Int32 {
        try expect(DBusType.unixFD, "a file descriptor")
        var fd: Int32 = -1
        dbus_message_iter_get_basic(&iter, &fd)
        advance()
        return fd
    }

    /// An array of bytes (`ay`), copied out of the message.
    mutating func bytes() throws -> [UInt8] {
        try expect(DBusType.array, "an array of bytes")
        guard dbus_message_iter_get_element_type(&iter) == DBusType.byte else { throw ArgumentError("expected an array of bytes") }
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        var pointer: UnsafeMutableRawPointer?
        var count: Int32 = 0
        if dbus_message_iter_get_arg_type(&sub) == DBusType.byte {
            dbus_message_iter_get_fixed_array(&sub, &pointer, &count)
        }
        advance()
        guard let pointer, count > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: Int(count)))
    }

    /// The elements of an array (or the fields of a struct, or a variant's
    /// value), each read by `body` from a reader of its own.
    mutating func container(_ type: Int32, _ what: String) throws -> MessageReader {
        try expect(type, what)
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        advance()
        return MessageReader(sub: sub)
    }

    /// `ao`, of at most `limit` paths (more: LimitsExceeded).
    mutating func objectPaths(limit: Int = Int.max) throws -> [String] {
        var array = try container(DBusType.array, "an array of object paths")
        var out: [String] = []
        while array.nextType != DBusType.invalid {
            guard out.count < limit else { throw Limits.exceeded("more than \(limit) objects in one call") }
            out.append(try array.objectPath())
        }
        return out
    }

    /// `a{ss}`, refusing a name given twice.
    mutating func stringDictionary(limit: Int) throws -> [String: String] {
        var array = try container(DBusType.array, "a dictionary of strings")
        var out: [String: String] = [:]
        while array.nextType != DBusType.invalid {
            guard out.count < limit else { throw ArgumentError("more than \(limit) attributes") }
            var entry = try array.container(DBusType.dictEntry, "a dictionary entry")
            let name = try entry.string()
            let value = try entry.string()
            guard out.updateValue(value, forKey: name) == nil else { throw ArgumentError("the attribute '\(name.prefix(64))' is given twice") }
        }
        return out
    }

    /// `a{sv}`: each name with a reader positioned on its variant's value.
    mutating func variantDictionary() throws -> [String: MessageReader] {
        var array = try container(DBusType.array, "a dictionary of variants")
        var out: [String: MessageReader] = [:]
        while array.nextType != DBusType.invalid {
            var entry = try array.container(DBusType.dictEntry, "a dictionary entry")
            let name = try entry.string()
            out[name] = try entry.container(DBusType.variant, "a variant")
        }
        return out
    }
}

/// A malformed or mistyped argument: replied as org.freedesktop.DBus.Error.InvalidArgs.
struct ArgumentError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// Appends arguments to a message being built. libdbus aborts on a string
/// that is not valid UTF-8 or holds a NUL: every string appended here is a
/// Swift String (valid UTF-8 by construction) with NULs replaced.
struct MessageWriter {
    private var iter = DBusMessageIter()
    /// Whether every append succeeded (false only when libdbus ran out of memory).
    private(set) var ok = true

    init(_ message: OpaquePointer) { dbus_message_iter_init_append(message, &iter) }
    private init(sub: DBusMessageIter) { iter = sub }

    private mutating func basic(_ type: Int32, _ value: UnsafeRawPointer) {
        if dbus_message_iter_append_basic(&iter, type, value) == 0 { ok = false }
    }

    mutating func string(_ text: String, type: Int32 = DBusType.string) {
        // The bytes, not Characters: a search by Character breaks graphemes (a twentieth of a lookup's string work).
        let clean = text.utf8.contains(0) ? text.replacingNULs() : text
        clean.withCString { c in
            var pointer: UnsafePointer<CChar>? = c
            basic(type, &pointer)
        }
    }

    mutating func objectPath(_ path: String) { string(path, type: DBusType.objectPath) }

    mutating func boolean(_ value: Bool) {
        var b: dbus_bool_t = value ? 1 : 0
        basic(DBusType.boolean, &b)
    }

    mutating func uint64(_ value: UInt64) {
        var v = value
        basic(DBusType.uint64, &v)
    }

    mutating func uint32(_ value: UInt32) {
        var v = value
        basic(DBusType.uint32, &v)
    }

    /// `ay` from `count` bytes at `bytes`.
    mutating func bytes(_ bytes: UnsafeRawBufferPointer) {
        container(DBusType.array, "y") { sub in
            var pointer: UnsafeRawPointer? = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)
            if dbus_message_iter_append_fixed_array(&sub.iter, DBusType.byte, &pointer, Int32(bytes.count)) == 0 { sub.ok = false }
        }
    }

    mutating func bytes(_ bytes: [UInt8]) { bytes.withUnsafeBytes { self.bytes($0) } }

    /// A container (`a` with its element signature, `r` and `e` with nil, `v` with the value's).
    mutating func container(_ type: Int32, _ signature: String?, _ body: (inout MessageWriter) -> Void) {
        var sub = DBusMessageIter()
        let opened: dbus_bool_t
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(&iter, type, $0, &sub) }
        } else {
            opened = dbus_message_iter_open_container(&iter, type, nil, &sub)
        }
        guard opened != 0 else { ok = false; return }
        var writer = MessageWriter(sub: sub)
        body(&writer)
        if !writer.ok { ok = false }
        if dbus_message_iter_close_container(&iter, &writer.iter) == 0 { ok = false }
    }

    mutating func objectPaths(_ paths: [String]) {
        container(DBusType.array, "o") { array in for path in paths { array.objectPath(path) } }
    }

    mutating func stringDictionary(_ dictionary: [String: String]) {
        container(DBusType.array, "{ss}") { array in
            for (name, value) in dictionary.sorted(by: { $0.key < $1.key }) {
                array.container(DBusType.dictEntry, nil) { entry in
                    entry.string(name)
                    entry.string(value)
                }
            }
        }
    }

    /// A variant holding a value of `signature`, written by `body`.
    mutating func variant(_ signature: String, _ body: (inout MessageWriter) -> Void) {
        container(DBusType.variant, signature, body)
    }
}

extension String {
    /// The text with each NUL replaced by U+FFFD (D-Bus strings can't hold NUL).
    func replacingNULs() -> String { String(unicodeScalars.map { $0 == "\u{0}" ? "\u{FFFD}" : Character($0) }) }
}
