import LocketSupport

/// RFC 4180 CSV read in place from guarded memory: fields are ranges of the
/// input, decoded only when asked, into `SecureBytes` for secrets. Accepts a
/// UTF-8 byte order mark, CRLF, LF or CR line ends, and quoted fields with
/// commas, doubled quotes and line breaks. Blank lines are skipped.
struct CSV {
    /// A field: its bytes in the input, without the surrounding quotes.
    struct Field {
        var start: Int
        var end: Int
        /// Quoted fields may hold `""` for one quote.
        var quoted: Bool
    }

    /// One record: its number (the header is row 1, counting records, not
    /// lines), and its fields or why it is malformed.
    struct Row {
        var number: Int
        var fields: [Field]
        var problem: String?
    }

    let input: SecureBytes

    /// Splits the whole input into rows. A quoted field left open runs to the
    /// end of the input: that row is malformed and is the last.
    func rows() -> [Row] {
        input.withUnsafeBytes { r in
            var rows: [Row] = []
            var i = r.starts(with: [0xef, 0xbb, 0xbf]) ? 3 : 0
            var number = 0
            let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ","), cr: UInt8 = 0x0d, lf: UInt8 = 0x0a
            while i < r.count {
                number += 1
                var row = Row(number: number, fields: [], problem: nil)
                var endOfRecord = false
                while !endOfRecord {
                    if i < r.count, r[i] == quote {
                        var j = i + 1
                        var closed = false
                        while j < r.count {
                            if r[j] == quote {
                                if j + 1 < r.count, r[j + 1] == quote { j += 2; continue }
                                closed = true
                                break
                            }
                            j += 1
                        }
                        guard closed else {
                            row.fields.append(Field(start: i + 1, end: r.count, quoted: true))
                            row.problem = "a quoted field is not closed before the end of the file"
                            i = r.count
                            break
                        }
                        row.fields.append(Field(start: i + 1, end: j, quoted: true))
                        i = j + 1
                        if i < r.count, r[i] != comma, r[i] != cr, r[i] != lf {
                            row.problem = row.problem ?? "text follows the closing quote of field \(row.fields.count)"
                            while i < r.count, r[i] != comma, r[i] != cr, r[i] != lf { i += 1 }
                        }
                    } else {
                        var j = i
                        while j < r.count, r[j] != comma, r[j] != cr, r[j] != lf { j += 1 }
                        row.fields.append(Field(start: i, end: j, quoted: false))
                        i = j
                    }
                    if i >= r.count { endOfRecord = true }
                    else if r[i] == comma { i += 1; if i >= r.count { row.fields.append(Field(start: i, end: i, quoted: false)); endOfRecord = true } }
                    else {
                        if r[i] == cr, i + 1 < r.count, r[i + 1] == lf { i += 1 }
                        i += 1
                        endOfRecord = true
                    }
                }
                let blank = row.fields.count == 1 && !row.fields[0].quoted && row.fields[0].start == row.fields[0].end
                if !blank { rows.append(row) } else { number -= 1 }
            }
            return rows
        }
    }

    /// A field's bytes with `""` undone (for values that are not secret).
    func bytes(_ field: Field) -> [UInt8] {
        input.withUnsafeBytes { r in
            let slice = r[field.start..<field.end]
            guard field.quoted else { return Array(slice) }
            var out: [UInt8] = []
            out.reserveCapacity(slice.count)
            var i = field.start
            while i < field.end {
                out.append(r[i])
                i += r[i] == UInt8(ascii: "\"") && i + 1 < field.end && r[i + 1] == UInt8(ascii: "\"") ? 2 : 1
            }
            return out
        }
    }

    /// A field decoded straight into guarded memory (passwords, seeds).
    func secure(_ field: Field) throws -> SecureBytes {
        try input.withUnsafeBytes { r in
            var n = 0
            var i = field.start
            while i < field.end {
                n += 1
                i += field.quoted && r[i] == UInt8(ascii: "\"") && i + 1 < field.end && r[i + 1] == UInt8(ascii: "\"") ? 2 : 1
            }
            let out = try SecureBytes(count: n)
            out.withUnsafeMutableBytes { o in
                var i = field.start, k = 0
                while i < field.end {
                    o[k] = r[i]
                    k += 1
                    i += field.quoted && r[i] == UInt8(ascii: "\"") && i + 1 < field.end && r[i + 1] == UInt8(ascii: "\"") ? 2 : 1
                }
            }
            return out
        }
    }
}

/// A CSV export read by its header: columns found by name (case and
/// surrounding spaces ignored), rows checked against the header's width.
struct CSVTable {
    let csv: CSV
    let header: [String]
    let rows: ArraySlice<CSV.Row>
    private let columns: [String: Int]

    /// Reads the header row; errSecDecode naming `format` when the file is
    /// empty, its header is malformed, or names one of `columns` twice.
    init(_ input: SecureBytes, format: String, required: [[String]], known: [[String]]) throws {
        csv = CSV(input: input)
        let all = csv.rows()
        guard let first = all.first, first.problem == nil else {
            throw KeychainError(.decode, "not a \(format) export: \(all.isEmpty ? "the file is empty" : "its header row is malformed")")
        }
        let reader = csv
        let header = first.fields.map { String(decoding: reader.bytes($0), as: UTF8.self).trimmingSpaces.lowercased() }
        self.header = header
        var columns: [String: Int] = [:]
        for names in required + known {
            let found = header.indices.filter { names.contains(header[$0]) }
            // Two columns for one meaning (two Password columns): no way to tell which is right.
            guard found.count <= 1 else { throw KeychainError(.decode, "not a \(format) export: its header has the column '\(Printable.clip(names[0]))' twice") }
            if let index = found.first { columns[names[0]] = index }
        }
        for names in required where columns[names[0]] == nil {
            throw KeychainError(.decode, "not a \(format) export: its header has no '\(names[0])' column")
        }
        self.columns = columns
        rows = all.dropFirst()
    }

    /// The field of `column` (its first name in the lists given to init), or nil when the export has no such column.
    func field(_ row: CSV.Row, _ column: String) -> CSV.Field? {
        // A short row (reported by `problem`) still names its title when it has one.
        columns[column].flatMap { $0 < row.fields.count ? row.fields[$0] : nil }
    }

    func bytes(_ row: CSV.Row, _ column: String) -> [UInt8] { field(row, column).map(csv.bytes) ?? [] }

    func secure(_ row: CSV.Row, _ column: String) throws -> SecureBytes { try field(row, column).map(csv.secure) ?? SecureBytes() }

    /// Why a row can't be read, or nil.
    func problem(_ row: CSV.Row) -> String? {
        if let problem = row.problem { return problem }
        if row.fields.count != header.count { return "it has \(row.fields.count) fields where the header has \(header.count)" }
        return nil
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" { s.removeLast() }
        return String(s)
    }
}

/// ISO 8601 / RFC 3339 times (`2024-05-01T12:30:00Z`, fractions and offsets
/// allowed) as milliseconds since 1970; nil when malformed.
enum ISO8601 {
    static func milliseconds(_ bytes: [UInt8]) -> Int64? {
        let s = Array(String(decoding: bytes, as: UTF8.self).trimmingSpaces.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= s.count else { return nil }
            var n = 0
            for i in range { guard let d = decimalDigit(s[i]) else { return nil }; n = n * 10 + Int(d) }
            return n
        }
        guard s.count >= 19, s[4] == UInt8(ascii: "-"), s[7] == UInt8(ascii: "-"), s[10] == UInt8(ascii: "T") || s[10] == UInt8(ascii: " "),
              s[13] == UInt8(ascii: ":"), s[16] == UInt8(ascii: ":"),
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var i = 19
        var millis = 0
        if i < s.count, s[i] == UInt8(ascii: ".") {
            i += 1
            var digits = 0
            while i < s.count, let d = decimalDigit(s[i]) {
                if digits < 3 { millis = millis * 10 + Int(d) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            if digits < 3 { for _ in digits..<3 { millis *= 10 } }
        }
        var offset = 0
        if i < s.count {
            if s[i] == UInt8(ascii: "Z") || s[i] == UInt8(ascii: "z") { i += 1 }
            else if s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-") {
                guard let h = number((i + 1)..<(i + 3)), i + 6 <= s.count, s[i + 3] == UInt8(ascii: ":"), let m = number((i + 4)..<(i + 6)) else { return nil }
                offset = (h * 60 + m) * 60 * (s[i] == UInt8(ascii: "+") ? 1 : -1)
                i += 6
            } else { return nil }
        }
        guard i == s.count else { return nil }
        let days = daysFromCivil(year, month, day)
        return (Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second - offset)) * 1000 + Int64(millis)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(_ year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
