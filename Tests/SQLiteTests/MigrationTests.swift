import Foundation
import SQLite
import Testing

@Suite struct MigrationTests {
    private let initial = [
        Migration("001-ops", "CREATE TABLE ops(id INTEGER PRIMARY KEY, body BLOB NOT NULL) STRICT"),
        Migration(
            "002-peers",
            """
            CREATE TABLE peers(key BLOB PRIMARY KEY, name TEXT NOT NULL) STRICT;
            CREATE INDEX peers_by_name ON peers(name);
            """),
    ]

    private func recorded(_ db: Database) throws -> [String] {
        try db.prepare("SELECT name FROM schema_migrations ORDER BY rowid").rows { $0.text(0) }
    }

    @Test func migrate_appliesEachOnceInOrderAndRecordsItsName() throws {
        try withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("node.db").path
            let db = try Database(path: path)
            try db.migrate(initial)
            #expect(try recorded(db) == ["001-ops", "002-peers"])
            let appliedAt = try db.scalar(
                "SELECT min(applied_at) FROM schema_migrations", as: Int64.self)
            #expect((appliedAt ?? 0) > 1_600_000_000)
            try db.execute("INSERT INTO peers VALUES (?, ?)", .blob([1]), "ana")

            // The tables would already exist: a second run must not execute anything again.
            try db.migrate(initial)
            db.close()
            let reopened = try Database(path: path)
            try reopened.migrate(initial)
            #expect(try recorded(reopened) == ["001-ops", "002-peers"])
            #expect(try reopened.scalar("SELECT name FROM peers", as: String.self) == "ana")
        }
    }

    @Test func migrate_appliesOnlyMigrationsAddedLater() throws {
        let db = try Database(path: ":memory:")
        try db.migrate(Array(initial.prefix(1)))
        #expect(try recorded(db) == ["001-ops"])
        try db.migrate(initial)
        #expect(try recorded(db) == ["001-ops", "002-peers"])
    }

    @Test func failingMigration_leavesNothingOfItselfAndThrows() throws {
        let db = try Database(path: ":memory:")
        let broken = Migration(
            "003-broken",
            """
            CREATE TABLE settings(key TEXT PRIMARY KEY, value ANY) STRICT;
            INSERT INTO settings VALUES ('a', 1);
            INSERT INTO no_such_table VALUES (1);
            """)
        let error = expectSQLiteError(code: SQLiteError.error) {
            try db.migrate(initial + [broken, Migration("004-never", "CREATE TABLE never(x)")])
        }
        #expect(error?.message.contains("no_such_table") == true)
        #expect(try recorded(db) == ["001-ops", "002-peers"])
        #expect(
            try db.scalar(
                "SELECT count(*) FROM sqlite_master WHERE name = 'settings'", as: Int.self) == 0)
        #expect(
            try db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'never'", as: Int.self)
                == 0)
        #expect(!db.isInTransaction)
    }

    /// A migration's code runs once, after its SQL, inside its transaction.
    @Test func migrationCode_runsOnceAfterItsSQL_inItsTransaction() throws {
        let db = try Database(path: ":memory:")
        let backfill = Migration("003-backfill", "INSERT INTO ops(body) VALUES (X'01')") { db in
            #expect(db.isInTransaction)
            let rows = try db.scalar("SELECT count(*) FROM ops", as: Int.self) ?? 0
            try db.execute("INSERT INTO peers VALUES (X'02', ?)", .text("saw \(rows)"))
        }
        try db.migrate(initial + [backfill])
        try db.migrate(initial + [backfill])
        #expect(try recorded(db) == ["001-ops", "002-peers", "003-backfill"])
        #expect(try db.prepare("SELECT name FROM peers").rows { $0.text(0) } == ["saw 1"])
    }

    /// A migration whose code throws leaves nothing of itself, its SQL included.
    @Test func failingMigrationCode_rollsBackItsSQL_andRecordsNothing() throws {
        struct Failed: Error {}
        let db = try Database(path: ":memory:")
        let broken = Migration("003-broken", "CREATE TABLE settings(key TEXT PRIMARY KEY, value ANY) STRICT") { _ in throw Failed() }
        #expect(throws: Failed.self) { try db.migrate(initial + [broken]) }
        #expect(try recorded(db) == ["001-ops", "002-peers"])
        #expect(try db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'settings'", as: Int.self) == 0)
        #expect(!db.isInTransaction)
    }

    @Test func unknownRecordedMigration_throwsBeforeApplyingAnything() throws {
        let db = try Database(path: ":memory:")
        try db.migrate(initial + [Migration("009-from-the-future", "CREATE TABLE future(x)")])
        let error = expectSQLiteError(code: SQLiteError.error) {
            try db.migrate(initial + [Migration("003-settings", "CREATE TABLE settings(x)")])
        }
        #expect(error?.message.contains("009-from-the-future") == true)
        #expect(
            try db.scalar(
                "SELECT count(*) FROM sqlite_master WHERE name = 'settings'", as: Int.self) == 0)
    }

    @Test func duplicateMigrationNames_areRefused() throws {
        let db = try Database(path: ":memory:")
        expectSQLiteError(code: SQLiteError.misuse) {
            try db.migrate([
                Migration("001", "CREATE TABLE a(x)"), Migration("001", "CREATE TABLE b(x)"),
            ])
        }
    }
}
