import Foundation
import SQLite
import Testing

/// `Database.salvageRows` (issue 39): every row on a sound page of a damaged table, in rowid
/// order, and the rowid runs of the damaged pages.
@Suite struct SalvageRowsTests {
    static let rows = 400

    /// A table of `rows` rows of 200 bytes (about four to a 1 KiB leaf), closed so every page is
    /// in the file; returns each leaf page with the rowids on it, in rowid order.
    static func makeTable(at path: String) throws -> [(page: Int, rowids: ClosedRange<Int64>)] {
        let database = try Database(path: path)
        try database.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, payload BLOB NOT NULL) STRICT")
        try database.transaction {
            for index in 1...rows {
                try database.execute("INSERT INTO t(id, payload) VALUES (?, ?)", .integer(Int64(index)), .blob([UInt8](repeating: 7, count: 200)))
            }
        }
        let leaves = try database.prepare("SELECT pageno, ncell FROM dbstat WHERE name = 't' AND pagetype = 'leaf' ORDER BY path").rows {
            ($0.int(0), $0.int(1))
        }
        database.close()
        var first: Int64 = 1
        return leaves.map { page, cells in
            defer { first += Int64(cells) }
            return (page, first...(first + Int64(cells) - 1))
        }
    }

    static func overwrite(pages: [Int], of path: String) throws {
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        for page in pages {
            for offset in (page - 1) * Database.newFilePageSize..<page * Database.newFilePageSize { bytes[offset] = 0x55 }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    static func scan(_ path: String, maxProbes: Int = Database.maxSalvageProbes) throws -> (scan: Database.SalvageScan, rowids: [Int64]) {
        let database = try Database(path: path, mode: .readOnly)
        defer { database.close() }
        var rowids: [Int64] = []
        let scan = try database.salvageRows(of: "t", columns: ["payload"], maxProbes: maxProbes) { rowid, row in
            #expect(row.blob(1).count == 200)
            rowids.append(rowid)
        }
        return (scan, rowids)
    }

    /// Leaves in the middle overwritten (one alone, two side by side): a plain query fails, the
    /// scan reads every other row and names exactly the damaged leaves' rowids.
    @Test func damagedLeaves_areSteppedOver_andNamed() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("t.db").path
            let leaves = try Self.makeTable(at: path)
            #expect(leaves.count > 60)
            #expect(try Self.scan(path).rowids == (1...Int64(Self.rows)).map { $0 }, "a sound table is read whole")
            let damaged = [leaves[10], leaves[40], leaves[41]]
            try Self.overwrite(pages: damaged.map(\.page), of: path)
            let database = try Database(path: path, mode: .readOnly)
            expectSQLiteError(code: SQLiteError.corrupt) { _ = try database.prepare("SELECT count(payload) FROM t").rows { $0.int(0) } }
            database.close()

            let (scan, rowids) = try Self.scan(path)
            let lost = Set(damaged.flatMap { Array($0.rowids) })
            #expect(rowids == (1...Int64(Self.rows)).filter { !lost.contains($0) })
            #expect(scan.rowsRead == rowids.count && scan.complete)
            #expect(scan.unreadable == [leaves[10].rowids, leaves[40].rowids.lowerBound...leaves[41].rowids.upperBound])
        }
    }

    /// The last leaf overwritten hides the table's largest rowid: the scan probes past it until
    /// its budget runs out and says the end was not reached.
    @Test func damagedLastLeaf_probesUpToTheBudget_andSaysSo() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("t.db").path
            let leaves = try Self.makeTable(at: path)
            let last = try #require(leaves.last)
            try Self.overwrite(pages: [last.page], of: path)
            let (scan, rowids) = try Self.scan(path, maxProbes: 100)
            #expect(rowids == (1..<last.rowids.lowerBound).map { $0 })
            #expect(!scan.complete)
            #expect(scan.unreadable.count == 1 && scan.unreadable.first?.lowerBound == last.rowids.lowerBound)
        }
    }

    /// An error of the caller's own is not damage: it comes back unchanged.
    @Test func bodyErrors_areThrown() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("t.db").path
            _ = try Self.makeTable(at: path)
            let database = try Database(path: path, mode: .readOnly)
            #expect(throws: TestFailure(tag: "stop")) {
                _ = try database.salvageRows(of: "t", columns: ["payload"]) { _, _ in throw TestFailure(tag: "stop") }
            }
        }
    }
}
