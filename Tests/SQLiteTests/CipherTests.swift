import Foundation
import SQLite
import Testing

/// Page-level encryption of a database file (`Database+Cipher.swift`, docs/DESIGN.md §5.1):
/// nothing written through the key can be found in the files without it; a plain file converts
/// with nothing lost; a damaged page reads as damage, so salvage still steps over it.
@Suite struct CipherTests {
    static let key = [UInt8](repeating: 0x42, count: 32)
    static let marker = "zebra-marker-at-rest"

    /// Every file whose name starts with the database's, as bytes.
    static func bytesOnDisk(_ path: String) throws -> [(String, [UInt8])] {
        let directory = (path as NSString).deletingLastPathComponent
        return try FileManager.default.contentsOfDirectory(atPath: directory).sorted().map {
            ($0, try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/" + $0))))
        }
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count, let first = needle.first else { return false }
        var index = 0
        while index <= haystack.count - needle.count {
            if haystack[index] == first, Array(haystack[index..<index + needle.count]) == needle { return true }
            index += 1
        }
        return false
    }

    static func fill(_ database: Database, rows: Int) throws {
        try database.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT NOT NULL, big BLOB) STRICT")
        try database.execute("CREATE INDEX t_body ON t(body)")
        try database.transaction {
            for index in 1...rows {
                // Every tenth row is longer than a page (overflow pages).
                let big = index % 10 == 0 ? [UInt8]((Self.marker + "-overflow-").utf8) + [UInt8](repeating: 0x61, count: 3000) : nil
                try database.execute(
                    "INSERT INTO t(id, body, big) VALUES (?, ?, ?)", .integer(Int64(index)), .text("\(Self.marker) \(index)"), big.map { .blob($0) } ?? .null)
            }
        }
    }

    static func rows(_ database: Database) throws -> [String] {
        try database.prepare("SELECT body FROM t ORDER BY id").rows { $0.text(0) }
    }

    /// Written through the key and still in the WAL (not checkpointed), then checkpointed: the
    /// marker is in no file, the key reads every row back, and no key or a wrong one is refused.
    @Test func encryptedFile_revealsNothing_andReadsBackWithItsKey() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("c.db").path
            let database = try Database(path: path, cipherKey: Self.key)
            #expect(database.isEncrypted)
            try Self.fill(database, rows: 300)
            for (name, bytes) in try Self.bytesOnDisk(path) {
                #expect(!Self.contains(bytes, Array(Self.marker.utf8)), "\(name) holds the text in clear while the WAL is live")
            }
            try database.checkpoint()
            database.close()
            #expect(Database.fileFormat(at: path) == .encrypted)
            for (name, bytes) in try Self.bytesOnDisk(path) {
                #expect(!Self.contains(bytes, Array(Self.marker.utf8)), "\(name) holds the text in clear")
                #expect(!Self.contains(bytes, Self.key), "\(name) holds the key")
            }
            let reopened = try Database(path: path, mode: .readOnly, cipherKey: Self.key)
            #expect(try Self.rows(reopened).count == 300)
            #expect(try reopened.scalar("PRAGMA integrity_check") == "ok")
            reopened.close()
            #expect(throws: SQLiteError.self) { _ = try Database(path: path, mode: .readOnly) }
            #expect(throws: SQLiteError.self) { _ = try Database(path: path, mode: .readOnly, cipherKey: [UInt8](repeating: 1, count: 32)) }
        }
    }

    /// A plain file converts in place with every row, index and overflow page intact, and the
    /// plain bytes are gone from the directory.
    @Test func plainFile_convertsWithNothingLost() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("p.db").path
            let plain = try Database(path: path)
            try Self.fill(plain, rows: 300)
            let before = try Self.rows(plain)
            let blobs = try plain.prepare("SELECT big FROM t WHERE big IS NOT NULL ORDER BY id").rows { $0.blob(0) }
            plain.close()
            #expect(Database.fileFormat(at: path) == .plain)
            try Database.encryptPlainFile(at: path, key: Self.key)
            #expect(Database.fileFormat(at: path) == .encrypted)
            for (name, bytes) in try Self.bytesOnDisk(path) {
                #expect(!Self.contains(bytes, Array(Self.marker.utf8)), "\(name) holds the text in clear after the conversion")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["p.db"])
            let reopened = try Database(path: path, cipherKey: Self.key)
            #expect(try Self.rows(reopened) == before)
            #expect(try reopened.prepare("SELECT big FROM t WHERE big IS NOT NULL ORDER BY id").rows { $0.blob(0) } == blobs)
            #expect(try reopened.scalar("PRAGMA integrity_check") == "ok")
            try reopened.execute("INSERT INTO t(id, body) VALUES (1000, 'after')")
            reopened.close()
        }
    }

    /// A store made with 4 KiB pages (before 1 KiB pages were the default) converts and keeps its
    /// page size.
    @Test func plainFileWith4KiBPages_convertsWithNothingLost() throws {
        try withTemporaryDirectory { directory in
            let source = directory.appendingPathComponent("s.db").path
            let path = directory.appendingPathComponent("p4.db").path
            let plain = try Database(path: source)
            try Self.fill(plain, rows: 200)
            try plain.execute("PRAGMA page_size = 4096")
            try plain.execute("VACUUM INTO '\(path)'")
            plain.close()
            let before = try Self.rows(try Database(path: path, mode: .readOnly))
            #expect(try Database(path: path, mode: .readOnly).scalar("PRAGMA page_size") == 4096)
            try Database.encryptPlainFile(at: path, key: Self.key)
            let reopened = try Database(path: path, cipherKey: Self.key)
            #expect(try reopened.scalar("PRAGMA page_size") == 4096)
            #expect(try Self.rows(reopened) == before)
            #expect(try reopened.scalar("PRAGMA integrity_check") == "ok")
        }
    }

    /// One page's bytes changed on disk: a query over it fails as damage, and `salvageRows`
    /// reads every row on the other pages.
    @Test func damagedPage_readsAsDamage_andSalvageStepsOverIt() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("d.db").path
            let database = try Database(path: path, cipherKey: Self.key)
            try database.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, payload BLOB NOT NULL) STRICT")
            try database.transaction {
                for index in 1...400 {
                    try database.execute("INSERT INTO t(id, payload) VALUES (?, ?)", .integer(Int64(index)), .blob([UInt8](repeating: 7, count: 200)))
                }
            }
            let leaves = try database.prepare("SELECT pageno FROM dbstat WHERE name = 't' AND pagetype = 'leaf' ORDER BY path").rows { $0.int(0) }
            try database.checkpoint()
            database.close()
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            let page = leaves[20]
            bytes[(page - 1) * Database.newFilePageSize + 300] ^= 0x01
            try Data(bytes).write(to: URL(fileURLWithPath: path))

            let damaged = try Database(path: path, mode: .readOnly, cipherKey: Self.key)
            #expect(throws: SQLiteError.self) { _ = try damaged.prepare("SELECT count(payload) FROM t").rows { $0.int(0) } }
            var read = 0
            let scan = try damaged.salvageRows(of: "t", columns: ["payload"]) { _, _ in read += 1 }
            #expect(scan.unreadable.count == 1)
            #expect(read > 380 && read < 400, "read \(read) of 400 rows")
        }
    }
}
