import CSQLite

extension Database {
    /// Called whenever a transaction rolls back (an error, or an explicit ROLLBACK), so an owner
    /// that caches row ids learned inside the transaction can forget them: after a rollback those
    /// rows no longer exist. Runs synchronously on the thread that caused the rollback.
    public func onRollback(_ handler: (() -> Void)?) throws {
        let connection = try openConnection()
        rollbackHandler = handler
        if handler == nil {
            sqlite3_rollback_hook(connection, nil, nil)
        } else {
            // The connection never outlives `self`, so an unretained pointer is safe.
            sqlite3_rollback_hook(connection, databaseRollbackHook, Unmanaged.passUnretained(self).toOpaque())
        }
    }
}

/// The C callback for `sqlite3_rollback_hook`; defined at file scope so it carries no actor isolation.
private func databaseRollbackHook(_ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    Unmanaged<Database>.fromOpaque(context).takeUnretainedValue().rollbackHandler?()
}
