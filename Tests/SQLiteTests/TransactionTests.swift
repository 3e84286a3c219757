import Foundation
import SQLite
import Testing

@Suite struct TransactionTests {
    private func makeDatabase() throws -> Database {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t(x INTEGER NOT NULL) STRICT")
        return db
    }

    private func count(_ db: Database) throws -> Int {
        try db.scalar("SELECT count(*) FROM t", as: Int.self) ?? -1
    }

    @Test func transaction_commitsAndReturnsTheBodysValue() throws {
        let db = try makeDatabase()
        let result = try db.transaction {
            try db.execute("INSERT INTO t VALUES (?)", 1)
            try db.execute("INSERT INTO t VALUES (?)", 2)
            #expect(db.isInTransaction)
            return "done"
        }
        #expect(result == "done")
        #expect(!db.isInTransaction)
        #expect(try count(db) == 2)
    }

    @Test func transaction_rollsBackOnThrow_andRethrowsTheOriginalError() throws {
        let db = try makeDatabase()
        let error = #expect(throws: TestFailure.self) {
            try db.transaction {
                try db.execute("INSERT INTO t VALUES (?)", 1)
                throw TestFailure(tag: "body")
            }
        }
        #expect(error == TestFailure(tag: "body"))
        #expect(!db.isInTransaction)
        #expect(try count(db) == 0)
    }

    @Test func transaction_rollsBackEarlierWorkWhenAStatementFails() throws {
        let db = try makeDatabase()
        expectSQLiteError(code: SQLiteError.constraint) {
            try db.transaction(.deferred) {
                try db.execute("INSERT INTO t VALUES (?)", 1)
                try db.execute("INSERT INTO t VALUES (?)", .null)
            }
        }
        #expect(try count(db) == 0)
    }

    @Test func nestedTransaction_rollsBackOnlyItsOwnWork() throws {
        let db = try makeDatabase()
        try db.transaction {
            try db.execute("INSERT INTO t VALUES (?)", 1)
            #expect(throws: TestFailure.self) {
                try db.transaction {
                    try db.execute("INSERT INTO t VALUES (?)", 2)
                    throw TestFailure(tag: "inner")
                }
            }
            try db.transaction {
                try db.execute("INSERT INTO t VALUES (?)", 3)
            }
        }
        #expect(try db.prepare("SELECT x FROM t ORDER BY x").rows { $0.int(0) } == [1, 3])
    }

    /// A store caches row ids learned inside a transaction and forgets them in its rollback
    /// handler; rows undone by a savepoint are as gone, so the handler runs for those too.
    @Test func nestedTransactionThatThrows_callsTheRollbackHandler_andTheOuterOneCommits() throws {
        let db = try makeDatabase()
        let calls = Counter()
        try db.onRollback { calls.value += 1 }
        try db.transaction {
            try db.execute("INSERT INTO t VALUES (?)", 1)
            _ = try? db.transaction {
                try db.execute("INSERT INTO t VALUES (?)", 2)
                throw TestFailure(tag: "inner")
            }
            #expect(calls.value == 1)
            try db.transaction { try db.execute("INSERT INTO t VALUES (?)", 3) }
        }
        #expect(calls.value == 1, "a commit calls no rollback handler")
        #expect(try db.prepare("SELECT x FROM t ORDER BY x").rows { $0.int(0) } == [1, 3])
    }

    private final class Counter {
        var value = 0
    }

    @Test func nestedTransaction_isUndoneWhenTheOuterOneThrows() throws {
        let db = try makeDatabase()
        #expect(throws: TestFailure.self) {
            try db.transaction {
                try db.transaction { try db.execute("INSERT INTO t VALUES (?)", 1) }
                throw TestFailure(tag: "outer")
            }
        }
        #expect(try count(db) == 0)
    }

    @Test func immediateTransaction_waitsThenReportsBusyWhileAnotherConnectionWrites() throws {
        try withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("node.db").path
            let first = try Database(path: path)
            let second = try Database(path: path)
            try first.execute("CREATE TABLE t(x INTEGER) STRICT")
            try second.execute("PRAGMA busy_timeout = 10")
            try first.transaction {
                try first.execute("INSERT INTO t VALUES (?)", 1)
                expectSQLiteError(code: SQLiteError.busy) {
                    try second.transaction { try second.execute("INSERT INTO t VALUES (?)", 2) }
                }
                // WAL: the reader still sees the last committed state.
                #expect(try second.scalar("SELECT count(*) FROM t", as: Int.self) == 0)
            }
            #expect(try second.scalar("SELECT count(*) FROM t", as: Int.self) == 1)
        }
    }
}
