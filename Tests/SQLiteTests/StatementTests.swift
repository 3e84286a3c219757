import Foundation
import SQLite
import Testing

@Suite struct StatementTests {
    @Test func strictTable_rejectsWrongType_withConstraintCodeAndTheSQL() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t(x INTEGER NOT NULL) STRICT")
        let sql = "INSERT INTO t(x) VALUES (?)"
        let error = expectSQLiteError(code: SQLiteError.constraint) {
            try db.execute(sql, .text("not a number"))
        }
        #expect(error?.sql == sql)
        #expect(error?.extendedCode == 3091)  // SQLITE_CONSTRAINT_DATATYPE
        #expect(error?.message.contains("cannot store TEXT value in INTEGER column t.x") == true)
    }

    @Test func uniqueViolation_describesCodeNameMessageAndSQL() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t(x INTEGER UNIQUE) STRICT")
        try db.execute("INSERT INTO t(x) VALUES (?)", 1)
        let error = expectSQLiteError(code: SQLiteError.constraint) {
            try db.execute("INSERT INTO t(x) VALUES (?)", 1)
        }
        #expect(
            error?.description
                == "SQLite error 19 (constraint): UNIQUE constraint failed: t.x — in `INSERT INTO t(x) VALUES (?)`"
        )
    }

    @Test func syntaxError_throwsAtPrepareWithTheSQL() throws {
        let db = try Database(path: ":memory:")
        let error = expectSQLiteError(code: SQLiteError.error) { _ = try db.prepare("SELEC 1") }
        #expect(error?.sql == "SELEC 1")
        #expect(error?.message.contains("syntax error") == true)
    }

    @Test func values_roundTripInTheirStorageClass() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE v(id INTEGER PRIMARY KEY, x ANY) STRICT")
        let values: [SQLValue] = [
            .null, .integer(0), .integer(.max), .integer(.min), .real(-1.5), .real(.infinity),
            .text(""), .text("héllo, 世界 🎉"), .text("nul\u{0}inside"),
            .blob([]), .blob([0, 1, 2, 255]), .blob([UInt8](repeating: 0xAB, count: 1 << 20)),
        ]
        let insert = try db.cachedStatement("INSERT INTO v(x) VALUES (?)")
        for value in values { try insert.run(value) }
        let read = try db.prepare("SELECT x FROM v ORDER BY id").rows { $0.value(0) }
        #expect(read == values)
        #expect(try db.scalar("SELECT typeof(x) FROM v WHERE id = 10", as: String.self) == "blob")
    }

    @Test func emptyBlobAndNull_areDistinctButBothReadAsEmptyBytes() throws {
        let db = try Database(path: ":memory:")
        let statement = try db.prepare("SELECT ?, ?, ?")
        try statement.bind(.blob([]), .null, .text(""))
        #expect(try statement.step())
        #expect(statement.blob(0) == [])
        #expect(statement.blob(1) == [])
        #expect(!statement.isNull(0))
        #expect(statement.isNull(1))
        #expect(statement.text(1) == "")
        #expect(!statement.isNull(2))
        #expect(statement.value(0) == .blob([]))
    }

    @Test func uint64_isStoredAsItsBitPattern() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t(x INTEGER NOT NULL) STRICT")
        try db.execute("INSERT INTO t VALUES (?)", UInt64.max.sqlValue)
        #expect(try db.scalar("SELECT x FROM t", as: Int64.self) == -1)
        #expect(try db.scalar("SELECT x FROM t", as: UInt64.self) == .max)
        let big = UInt64(1) << 63 + 12_345
        #expect(UInt64(sqlValue: big.sqlValue) == big)
    }

    @Test func convertibles_mapToTheExpectedValues() throws {
        #expect(Int(sqlValue: .integer(42)) == 42)
        #expect(Int32(sqlValue: .integer(Int64(Int32.max) + 1)) == nil)
        #expect(Double(sqlValue: .integer(3)) == 3)
        #expect(Bool(sqlValue: .integer(2)) == true)
        #expect(false.sqlValue == .integer(0))
        #expect(String(sqlValue: .blob([65])) == nil)
        #expect([UInt8](sqlValue: .text("A")) == nil)
        #expect(Int?(sqlValue: .null) == .some(nil))
        #expect(Int?(sqlValue: .text("x")) == nil)
        #expect((nil as String?).sqlValue == .null)
        #expect(SQLValue(Optional(5)) == .integer(5))
        let literals: [SQLValue] = [1, 2.5, "three", true]
        #expect(literals == [.integer(1), .real(2.5), .text("three"), .integer(1)])
    }

    @Test func typedColumnGetters_readTheCurrentRow() throws {
        let db = try Database(path: ":memory:")
        let statement = try db.prepare(
            "SELECT 7 AS n, 2.5 AS d, 'txt' AS s, x'0102' AS b, NULL AS z")
        #expect(statement.columnCount == 5)
        #expect((0..<5).map(statement.columnName) == ["n", "d", "s", "b", "z"])
        #expect(try statement.step())
        #expect(statement.int(0) == 7)
        #expect(statement.int64(0) == 7)
        #expect(statement.double(1) == 2.5)
        #expect(statement.text(2) == "txt")
        #expect(statement.blob(3) == [1, 2])
        #expect(statement.withUnsafeBlob(3) { $0.count } == 2)
        #expect(statement.column(2, as: String.self) == "txt")
        #expect(statement.column(4, as: Int.self) == nil)
        #expect(try !statement.step())
    }

    @Test func bind_requiresOneValuePerParameter() throws {
        let db = try Database(path: ":memory:")
        let statement = try db.prepare("SELECT ?, ?")
        expectSQLiteError(code: SQLiteError.misuse) { try statement.bind(1) }
        expectSQLiteError(code: SQLiteError.misuse) { try statement.bind(1, 2, 3) }
        try statement.bind(1, 2)
    }

    @Test func executeWithBindings_refusesSeveralStatementsButAllowsTrailingComments() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t(x)")
        expectSQLiteError(code: SQLiteError.misuse) {
            try db.execute("INSERT INTO t VALUES (?); DELETE FROM t", 1)
        }
        #expect(try db.scalar("SELECT count(*) FROM t", as: Int.self) == 0)
        try db.execute("INSERT INTO t VALUES (?);  -- done\n ; ", 1)
        #expect(try db.scalar("SELECT count(*) FROM t", as: Int.self) == 1)
        expectSQLiteError(code: SQLiteError.misuse) { _ = try db.prepare("  -- nothing ") }
    }

    @Test func scalar_returnsNilForNoRowOrNullAndThrowsOnMismatch() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t(x)")
        #expect(try db.scalar("SELECT x FROM t", as: Int.self) == nil)
        #expect(try db.scalar("SELECT NULL", as: Int.self) == nil)
        #expect(try db.scalar("SELECT ? + ?", 2, 3, as: Int.self) == 5)
        let error = expectSQLiteError(code: 20) { _ = try db.scalar("SELECT 'x'", as: Int.self) }
        #expect(error?.sql == "SELECT 'x'")
    }

    @Test func cachedStatement_returnsTheSameResetStatementForReuse() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t(x INTEGER) STRICT")
        let insert = try db.cachedStatement("INSERT INTO t VALUES (?)")
        for i in 0..<100 { try insert.run(.integer(Int64(i))) }
        #expect(try db.cachedStatement("INSERT INTO t VALUES (?)") === insert)

        let select = try db.cachedStatement("SELECT x FROM t WHERE x >= ? ORDER BY x")
        try select.bind(98)
        #expect(try select.step())
        #expect(select.int(0) == 98)
        // Asking again mid-iteration rewinds it.
        let again = try db.cachedStatement("SELECT x FROM t WHERE x >= ? ORDER BY x")
        #expect(again === select)
        #expect(try again.rows(.integer(50)) { $0.int(0) }.count == 50)
        #expect(try again.rows(.integer(99)) { $0.int(0) } == [99])
        db.clearStatementCache()
        #expect(try db.cachedStatement("INSERT INTO t VALUES (?)") !== insert)
    }

    @Test func forEachRow_visitsEveryRowAndResets() throws {
        let db = try Database(path: ":memory:")
        let statement = try db.prepare(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
            SELECT i FROM n
            """)
        var sum = 0
        try statement.forEachRow([1000]) { sum += $0.int(0) }
        #expect(sum == 500_500)
        #expect(try statement.rows(3) { $0.int(0) } == [1, 2, 3])
    }

    @Test func firstRow_mapsTheFirstRowOnly_nilForNone_andResets() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t(x INTEGER) STRICT")
        let insert = try db.prepare("INSERT INTO t VALUES (?)")
        for i in 1...3 { try insert.run(.integer(Int64(i))) }
        let select = try db.prepare("SELECT x FROM t WHERE x >= ? ORDER BY x")
        #expect(try select.firstRow(.integer(2)) { $0.int(0) } == 2)
        #expect(try select.firstRow(.integer(4)) { $0.int(0) } == nil)
        #expect(try select.firstRow(.integer(1)) { $0.int(0) } == 1)
        // Reset although rows were left: the table is not locked by a statement under way.
        try db.execute("DROP TABLE t")
        let wrongCount = #expect(throws: SQLiteError.self) { try select.firstRow(.integer(1), .integer(2)) { $0.int(0) } }
        #expect(wrongCount?.code == SQLiteError.misuse)
    }

    @Test func lastInsertRowIDAndChanges_reflectTheLastStatement() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, x INTEGER) STRICT")
        try db.execute("INSERT INTO t(x) VALUES (?), (?), (?)", 1, 1, 2)
        #expect(db.lastInsertRowID == 3)
        #expect(db.changes == 3)
        try db.execute("UPDATE t SET x = 0 WHERE x = ?", 1)
        #expect(db.changes == 2)
    }

    @Test func statementsFinalize_soClosingLeavesNoWALAndNoOpenFiles() throws {
        try withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("node.db").path
            let descriptorsBefore = openDescriptorCount()
            for round in 0..<200 {
                let db = try Database(path: path)
                try db.execute("CREATE TABLE IF NOT EXISTS t(x INTEGER) STRICT")
                try db.cachedStatement("INSERT INTO t VALUES (?)").run(.integer(Int64(round)))
                do {
                    // Left mid-iteration, then released: deinit must finalize it.
                    let select = try db.prepare("SELECT x FROM t")
                    #expect(try select.step())
                }
                db.close()
                // The last connection removes the WAL only when no statement is left unfinalized.
                #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "round \(round)")
            }
            // A leak keeps 2–3 descriptors per round (400 or more); the slack absorbs tests running
            // alongside (in-process nodes hold sockets and stores).
            #expect(openDescriptorCount() <= descriptorsBefore + 150)
            #expect(try Database(path: path).scalar("SELECT count(*) FROM t", as: Int.self) == 200)
        }
    }

    @Test func statementOutlivingItsDatabase_staysSafeToRelease() throws {
        var statement: Statement?
        do {
            let db = try Database(path: ":memory:")
            statement = try db.prepare("SELECT 1")
        }
        #expect(statement?.sql == "SELECT 1")
        statement = nil
    }
}

/// Open file descriptors of this process, or 0 where `/dev/fd` cannot be listed.
private func openDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/dev/fd").count) ?? 0
}
