import CSQLite

/// When a transaction takes the write lock.
public enum TransactionKind: Sendable {
    /// Takes locks as statements need them; a read that later writes may fail with
    /// `SQLiteError.busy` without waiting. For read-only snapshots.
    case deferred
    /// Takes the write lock at `BEGIN`, waiting up to the busy timeout: the right default for
    /// any transaction that writes.
    case immediate
    /// Like `immediate`; in WAL mode the two behave the same.
    case exclusive

    var beginSQL: StaticString {
        switch self {
        case .deferred: "BEGIN DEFERRED TRANSACTION"
        case .immediate: "BEGIN IMMEDIATE TRANSACTION"
        case .exclusive: "BEGIN EXCLUSIVE TRANSACTION"
        }
    }
}

extension Database {
    /// Runs `body` in a transaction: commits if it returns, rolls back if it throws.
    ///
    /// Rethrows the error of `body` itself, never one from the rollback. Called inside another
    /// transaction it nests as a `SAVEPOINT` (and `kind` is ignored): throwing undoes only the
    /// inner work, and nothing is durable until the outermost transaction commits. `body` must
    /// not run `BEGIN`, `COMMIT` or `ROLLBACK` itself.
    ///
    /// `durable`: once this returns, the commit survives a power loss. File databases run WAL
    /// with `synchronous = NORMAL`, where a commit reaches the disk only at the next checkpoint
    /// (a power cut may drop the last commits, never half of one); a durable transaction syncs
    /// the WAL after its commit (`syncJournal`), the one sync `synchronous = FULL` makes per
    /// commit, and with it every commit before. Nested in another transaction, it makes that
    /// transaction's commit durable. The sync happens after the commit, rather than by setting
    /// `synchronous = FULL` around it, because SQLite refuses to change that setting inside a
    /// transaction, so a durable write nested in a batch could not ask for it.
    public func transaction<T>(
        _ kind: TransactionKind = .immediate, durable: Bool = false, _ body: () throws -> T
    ) throws -> T {
        if isInTransaction {
            if durable { durableCommitPending = true }
            return try savepoint(body)
        }
        durableCommitPending = durable
        try cachedStatement(kind.beginSQL).run()
        let result: T
        do {
            result = try body()
            try cachedStatement("COMMIT TRANSACTION").run()
        } catch {
            durableCommitPending = false
            rollbackIfOpen("ROLLBACK TRANSACTION")
            throw error
        }
        if durableCommitPending {
            durableCommitPending = false
            if durableSyncDeferred { durableSyncOwed = true } else { try syncJournal() }
        }
        truncateWALIfPending()
        return result
    }

    private func savepoint<T>(_ body: () throws -> T) throws -> T {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let statements = try savepointStatements(atDepth: savepointDepth)
        try statements.open.run()
        let result: T
        do {
            result = try body()
            try statements.release.run()
        } catch {
            let name = Self.savepointName(atDepth: savepointDepth)
            rollbackIfOpen("ROLLBACK TRANSACTION TO SAVEPOINT \(name)")
            rollbackIfOpen("RELEASE SAVEPOINT \(name)")
            // SQLite calls the rollback hook only for whole transactions; what an owner cached
            // from the undone rows is as stale here.
            rollbackHandler?()
            throw error
        }
        return result
    }

    /// One name per depth keeps the statements few and the nesting unambiguous.
    private static func savepointName(atDepth depth: Int) -> String { "parley_savepoint_\(depth)" }

    /// The statements that open and release the savepoint at `depth`, kept once prepared: every
    /// apply inside a node's drain runs in a savepoint, and building their SQL and looking it up
    /// in the statement cache each time showed in profiles.
    private func savepointStatements(atDepth depth: Int) throws -> SavepointStatements {
        while savepointStatementsByDepth.count < depth {
            let name = Self.savepointName(atDepth: savepointStatementsByDepth.count + 1)
            let open = try cachedStatement(dynamic: "SAVEPOINT \(name)")
            let release = try cachedStatement(dynamic: "RELEASE SAVEPOINT \(name)")
            savepointStatementsByDepth.append(SavepointStatements(open: open, release: release))
        }
        return savepointStatementsByDepth[depth - 1]
    }

    /// Runs a rollback unless SQLite already rolled back on its own (after `SQLITE_FULL`,
    /// `SQLITE_IOERR`, …); a failure here is dropped so the original error reaches the caller.
    private func rollbackIfOpen(_ sql: String) {
        guard isInTransaction else { return }
        try? cachedStatement(dynamic: sql).run()
    }
}
