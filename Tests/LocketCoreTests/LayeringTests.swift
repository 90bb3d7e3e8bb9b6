import Foundation
import Glibc
import XCTest

/// The module layering (docs/ARCHITECTURE.md, whose layer table is this
/// test's): what each directory under Sources/ may import or #include, and
/// inside LocketCore, what the engine and each backend may. A module the table doesn't know fails too,
/// so a new one is placed in the layers when it is added. SwiftPM lets a
/// target import any module its dependencies use, so only this test keeps
/// LocketCLI away from SQLite and libsodium.
final class LayeringTests: XCTestCase {
    /// Module -> what it may import. "libc" is any system header of a C
    /// module other than a library's; "internal X" allows X only as an
    /// `internal import` (or narrower), so it never reaches the module's clients.
    static let table: [String: Set<String>] = [
        "CSodium": ["libc", "CSodium"],
        "CSQLite": ["libc", "CSQLite"],
        "CCrypto": ["libc", "CCrypto"],
        "CLocketSystem": ["libc"],
        "CLocketSQLite": ["libc", "CSQLite"],
        // The system-call wrapper and spawner: below everything, the helper included.
        "LocketSystem": ["Glibc"],
        "LocketSupport": ["Glibc", "Synchronization", "internal CSodium", "LocketSystem"],
        "LocketCore": ["LocketSupport", "CSodium", "CSQLite", "CCrypto", "CLocketSQLite", "CLocketSystem", "LocketWire", "Glibc", "Synchronization"],
        "LocketTerminal": ["LocketCore", "LocketSupport", "CLocketSystem", "Glibc"],
        // Keychains in PostgreSQL (SPEC §17): a module over the engine, which
        // can't name it; it reaches only what the engine declares `package`.
        "LocketRemote": ["LocketCore", "LocketSupport", "LocketWire", "CSodium", "Glibc"],
        // "Which keychain": the one module that knows every storage.
        "LocketLocator": ["LocketCore", "LocketRemote", "LocketSupport"],
        // The command line names no backend (it compiles beside them); what
        // it reaches of them (the locator, the remote commands) is LocketCLIBackends'.
        "LocketCLI": ["LocketCore", "LocketSupport", "LocketTerminal", "CLocketSystem", "Glibc"],
        "LocketCLIBackends": ["LocketCLI", "LocketCore", "LocketLocator", "LocketRemote", "LocketSupport", "Glibc"],
        "locket": ["LocketCLI", "LocketCLIBackends", "Glibc"],
        // Apple's keychain API for Swift programs (SPEC §19): Foundation's
        // types stand in for Core Foundation's; never linked into `locket`.
        "Security": ["Foundation", "LocalAuthentication", "LocketCore", "LocketLocator", "LocketSupport", "LocketTerminal", "CLocketSystem", "Glibc", "Synchronization"],
        "LocalAuthentication": ["Foundation", "LocketCore", "LocketLocator", "LocketTerminal", "Glibc"],
        // The PostgreSQL helper (SPEC §17): libpq only ever in its own process.
        "CLibPQ": ["libc", "CLibPQ"],
        "LocketWire": ["Glibc", "LocketSystem"],
        "locket-postgres": ["LocketWire", "CLibPQ", "Glibc"],
        // The TPM helper (SPEC §21): libtss2 only ever in its own process;
        // CLocketTPM holds its TSS calls.
        "CLocketTPM": ["libc", "CTSS2"],
        "locket-tpm": ["LocketWire", "CLocketTPM", "Glibc"],
        // The Secret Service provider (SPEC §18): libdbus-1 only ever in its
        // own executable; the D-Bus transfer's DH and AES from libcrypto.
        "CDBus": ["libc", "CDBus"],
        "CLocketDBus": ["libc"],
        "LocketSecretService": ["LocketCore", "LocketSupport", "CDBus", "CLocketDBus", "CCrypto", "CLocketSystem", "Glibc"],
        "locket-secret-service": ["LocketSecretService", "Glibc"],
    ]

    /// Inside LocketCore (issue 25): a storage's library is its backend's
    /// alone (SQLite the file's; the helpers' wire protocol the TPM client's
    /// and the helper process's; the remote keychain is a module of its own,
    /// which the compiler keeps the engine from naming), and the engine
    /// (`Keychain`, its roles, its row scan, the storage protocol) imports
    /// neither and names no storage: it holds a `KeychainStorage` and never
    /// asks which. A new storage is a folder under Backends/ or a module
    /// over LocketCore, not a branch in Engine/.
    static let confined: [String: [String]] = [
        "CSQLite": ["LocketCore/Backends/File"],
        "CLocketSQLite": ["LocketCore/Backends/File"],
        "LocketWire": ["LocketCore/TPM", "LocketCore/Helpers"],
    ]
    static let engine = "LocketCore/Engine"
    /// The engine's folders: the engine and the items, and the session role.
    static let engineFolders = [engine, "LocketCore/Session"]
    static let engineImports: Set<String> = ["LocketSupport", "Glibc"]
    /// Words no file of the engine contains, in any case: the storages' names and their libraries'.
    static let engineNeverSays = ["remote", "postgres", "sqlite", "database", "FileStorage", ".file("]

    func testEveryModuleImportsOnlyWhatItsLayerAllows() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources").path
        let found = try Self.violations(sources: sources)
        XCTAssertEqual(found, [], "\n" + found.joined(separator: "\n"))
    }

    /// docs/ARCHITECTURE.md's layer table is this test's table: every module
    /// and folder of it has a row, and a Swift module's row names every
    /// module it may import.
    func testTheArchitecturePageShowsThisTable() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let page = try String(contentsOf: root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        guard let start = page.range(of: "## Layers and what each may touch"), let end = page.range(of: "\n## ", range: start.upperBound..<page.endIndex) else {
            return XCTFail("docs/ARCHITECTURE.md has no layer table")
        }
        let rows = page[start.upperBound..<end.lowerBound].split(separator: "\n").filter { $0.hasPrefix("| ") }.map { row in
            row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "") }
        }
        func row(naming name: String) -> [String]? {
            rows.first { $0.first?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.contains(name) == true }
        }
        for (module, allowed) in Self.table {
            guard let cells = row(naming: module) else { XCTFail("no row for \(module)"); continue }
            guard !module.hasPrefix("C") else { continue }
            for imported in allowed {
                let name = imported.replacingOccurrences(of: "internal ", with: "")
                XCTAssertTrue(cells.last?.contains(name) == true, "\(module)'s row does not name \(name)")
            }
        }
        for folder in Set(Self.confined.values.joined()).union(Self.engineFolders) {
            XCTAssertNotNil(row(naming: folder), "no row for \(folder)")
        }
        for imported in Self.engineImports { XCTAssertTrue(row(naming: Self.engine)?.last?.contains(imported) == true, imported) }
    }

    /// The checker finds a forbidden import, a forbidden #include and an
    /// unknown module, and passes what the table allows.
    func testTheCheckerFailsOnForbiddenImports() throws {
        let root = NSTemporaryDirectory() + "locket-layering-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let files = [
            "LocketCLI/Bad.swift": "import Glibc\n@preconcurrency import LocketCore\n@_implementationOnly import CSQLite\n",
            "LocketCLI/Sub/Worse.swift": "internal import struct CSodium.randombytes_implementation\n",
            "LocketSupport/Ok.swift": "internal import CSodium\nimport Glibc\n",
            "LocketSupport/Leak.swift": "public import CSodium\n",
            "CLocketSystem/x.c": "#include <termios.h>\n#include \"own.h\"\n#  include <sqlite3.h>\n",
            "Mystery/a.swift": "import Glibc\n",
            "LocketCore/Engine/Leaky.swift": "import LocketSupport\nimport CSodium\n// if a Remote keychain...\n",
            "LocketCore/Items/Raw.swift": "import CSQLite\n",
            "LocketCore/Backends/File/Db.swift": "import CSQLite\nimport CLocketSQLite\n",
        ]
        for (path, text) in files {
            let full = root + "/" + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: full, atomically: true, encoding: .utf8)
        }
        XCTAssertEqual(try Self.violations(sources: root), [
            "CLocketSystem/x.c: #include <sqlite3.h> (CSQLite) is not allowed in CLocketSystem",
            "LocketCLI/Bad.swift: import CSQLite is not allowed in LocketCLI",
            "LocketCLI/Sub/Worse.swift: import CSodium is not allowed in LocketCLI",
            "LocketCore/Engine/Leaky.swift: import CSodium is not allowed in LocketCore/Engine",
            "LocketCore/Engine/Leaky.swift: the engine names a storage ('remote')",
            "LocketCore/Items/Raw.swift: import CSQLite belongs to LocketCore/Backends/File",
            "LocketSupport/Leak.swift: import CSodium is allowed in LocketSupport only as `internal import`",
            "Mystery: a module the layering table doesn't know",
        ])
    }

    /// Every breach under `sources`, sorted, one line each naming the file and the import.
    static func violations(sources: String) throws -> [String] {
        var out: [String] = []
        for module in try FileManager.default.contentsOfDirectory(atPath: sources).sorted() {
            guard let allowed = table[module] else {
                out.append("\(module): a module the layering table doesn't know")
                continue
            }
            let directory = sources + "/" + module
            for file in FileManager.default.enumerator(atPath: directory)?.compactMap({ $0 as? String }) ?? [] {
                let name = "\(module)/\(file)"
                let path = directory + "/" + file
                if file.hasSuffix(".swift") {
                    let text = try String(contentsOfFile: path, encoding: .utf8)
                    let engineFolder = engineFolders.first { name.hasPrefix($0 + "/") }
                    if engineFolder != nil {
                        let lowered = text.lowercased()
                        for word in engineNeverSays where lowered.contains(word.lowercased()) {
                            out.append("\(name): the engine names a storage ('\(word)')")
                        }
                    }
                    for (access, imported) in swiftImports(text) {
                        if module == "LocketCore", let homes = confined[imported], !homes.contains(where: { name.hasPrefix($0 + "/") }) {
                            out.append("\(name): import \(imported) belongs to \(homes.joined(separator: ", "))")
                            continue
                        }
                        if let engineFolder, !engineImports.contains(imported) {
                            out.append("\(name): import \(imported) is not allowed in \(engineFolder)")
                            continue
                        }
                        if allowed.contains(imported) { continue }
                        if allowed.contains("internal " + imported) {
                            if ["internal", "fileprivate", "private"].contains(access) { continue }
                            out.append("\(name): import \(imported) is allowed in \(module) only as `internal import`")
                        } else {
                            out.append("\(name): import \(imported) is not allowed in \(module)")
                        }
                    }
                } else if file.hasSuffix(".c") || file.hasSuffix(".h") {
                    for header in includes(try String(contentsOfFile: path, encoding: .utf8)) {
                        guard let owner = headerOwner(header), !allowed.contains(owner) else { continue }
                        out.append("\(name): #include <\(header)> (\(owner)) is not allowed in \(module)")
                    }
                }
            }
        }
        return out.sorted()
    }

    /// (access level or "", module) of each import line: plain, `@testable`,
    /// `@_implementationOnly`, `@preconcurrency`, `public/package/internal import`,
    /// and `import struct M.Name`.
    static func swiftImports(_ text: String) -> [(String, String)] {
        let accessLevels: Set<Substring> = ["public", "package", "internal", "fileprivate", "private"]
        let kinds: Set<Substring> = ["struct", "class", "enum", "protocol", "typealias", "func", "let", "var", "actor"]
        var out: [(String, String)] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })[...]
            while let first = words.first, first.hasPrefix("@") { words = words.dropFirst() }
            var access = ""
            if let first = words.first, accessLevels.contains(first) { access = String(first); words = words.dropFirst() }
            guard words.first == "import" else { continue }
            words = words.dropFirst()
            if let first = words.first, kinds.contains(first) { words = words.dropFirst() }
            guard let path = words.first else { continue }
            out.append((access, String(path.split(separator: ".")[0])))
        }
        return out
    }

    /// The headers a C file includes with `#include <...>` (quoted includes are the module's own).
    static func includes(_ text: String) -> [String] {
        text.split(separator: "\n").compactMap { line in
            var rest = line.drop(while: { $0 == " " || $0 == "\t" })
            guard rest.hasPrefix("#") else { return nil }
            rest = rest.dropFirst().drop(while: { $0 == " " || $0 == "\t" })
            guard rest.hasPrefix("include") else { return nil }
            rest = rest.dropFirst("include".count).drop(while: { $0 == " " || $0 == "\t" })
            guard rest.hasPrefix("<"), let end = rest.firstIndex(of: ">") else { return nil }
            return String(rest[rest.index(after: rest.startIndex)..<end])
        }
    }

    /// The library module a system header belongs to; nil for the C library and the kernel's headers.
    static func headerOwner(_ header: String) -> String? {
        if header == "sqlite3.h" || header == "sqlite3ext.h" { return "CSQLite" }
        if header == "sodium.h" || header.hasPrefix("sodium/") { return "CSodium" }
        if header.hasPrefix("openssl/") { return "CCrypto" }
        if header == "libpq-fe.h" || header == "libpq-events.h" { return "CLibPQ" }
        if header.hasPrefix("dbus/") { return "CDBus" }
        if header.hasPrefix("tss2/") { return "CTSS2" }
        return nil
    }
}
