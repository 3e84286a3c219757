/// A named schema change, applied once per database and recorded in `schema_migrations`.
///
/// Once shipped, a migration MUST NOT change: databases that already recorded its name never
/// run it again. Add a new one instead. Its SQL may hold several statements but MUST NOT
/// contain `BEGIN`, `COMMIT` or `ROLLBACK`: it already runs inside its own transaction.
///
/// A migration that needs code (filling a new table from old rows, rewriting rows) carries it
/// as `code`, run after its SQL inside the same transaction: it runs once, like the SQL, and
/// rolls back with it.
public struct Migration: Sendable {
    /// The unique name recorded once the migration is applied, e.g. `"001-ops"`.
    public let name: String
    /// The statements to run, separated by `;` (may be empty when `code` does the work).
    public let sql: String
    /// Run after `sql` in the migration's transaction; it must not begin or end transactions
    /// of its own (`Database.transaction` inside it becomes a savepoint).
    public let code: (@Sendable (Database) throws -> Void)?

    public init(_ name: String, _ sql: String, code: (@Sendable (Database) throws -> Void)? = nil) {
        self.name = name
        self.sql = sql
        self.code = code
    }
}

extension Database {
    /// Applies, in order, each migration of `migrations` not yet recorded in this database.
    ///
    /// Each one runs in its own `IMMEDIATE` transaction together with the row recording it, so a
    /// failing migration leaves nothing of itself behind (earlier ones stay applied) and a crash
    /// never records a half-applied one. Safe against another process migrating the same file
    /// at the same time. Throws `SQLiteError` with code `SQLiteError.error` before applying
    /// anything if the database records a migration that is not in `migrations`: it was written
    /// by a newer version of the program.
    public func migrate(_ migrations: [Migration]) throws {
        var names = Set<String>()
        for migration in migrations where !names.insert(migration.name).inserted {
            throw SQLiteError.misuse("migration name \"\(migration.name)\" is used twice")
        }
        try execute(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations(
                name TEXT PRIMARY KEY,
                applied_at INTEGER NOT NULL
            ) STRICT
            """)
        let recorded = try prepare("SELECT name FROM schema_migrations ORDER BY name")
            .rows { $0.text(0) }
        let unknown = recorded.filter { !names.contains($0) }
        if !unknown.isEmpty {
            let list = unknown.map { "\"\($0)\"" }.joined(separator: ", ")
            throw SQLiteError(
                extendedCode: SQLiteError.error,
                message: "database \(path) was migrated by a newer version (unknown migrations "
                    + "\(list)); upgrade this program or use another data directory")
        }
        let applied = Set(recorded)
        for migration in migrations where !applied.contains(migration.name) {
            try transaction(.immediate) {
                // Checked again under the write lock: another process may have just applied it.
                let isRecorded = try cachedStatement(
                    "SELECT 1 FROM schema_migrations WHERE name = ?"
                ).rows(.text(migration.name)) { _ in true }
                guard isRecorded.isEmpty else { return }
                if !migration.sql.isEmpty { try execute(migration.sql) }
                try migration.code?(self)
                try execute(
                    """
                    INSERT INTO schema_migrations(name, applied_at)
                    VALUES (?, CAST(strftime('%s', 'now') AS INTEGER))
                    """, .text(migration.name))
            }
        }
    }
}
