import CSQLite

/// One connection to an SQLite database file.
///
/// Not thread-safe: give each file one owner (an actor) that serializes every call, and open
/// each file once per process. Other processes may open the same file: file databases use WAL,
/// so readers never block the writer, and `dataVersion` tells when another connection wrote.
/// Every failing C call throws `SQLiteError` with SQLite's message and the SQL.
public final class Database {
    /// How to open the file.
    public enum OpenMode: Sendable {
        /// Read and write; the file is created if missing. Throws `SQLiteError.readOnly` if the
        /// file or its directory cannot be written, rather than silently opening read-only.
        case readWrite
        /// Read only; the file must exist. Writes throw `SQLiteError.readOnly`.
        case readOnly
    }

    /// The path given at open (`":memory:"` for a private in-memory database).
    public let path: String
    /// The mode given at open.
    public let mode: OpenMode
    /// The SQLite VFS the file is opened through, by its registered name; nil for the default.
    public let vfs: String?
    /// Whether the file is encrypted (opened with its key).
    public let isEncrypted: Bool
    /// The VFS the connection uses: `vfs`, or the cipher VFS over it (a second connection to
    /// the file, such as the checkpointer's, opens through the same one).
    let connectionVFS: String?
    private var connection: OpaquePointer?
    private var statementCache: [String: Statement] = [:]
    /// The cached statements of SQL literals, by the literal's address: looking one up costs a
    /// pointer's hash, not the whole SQL text's (which showed in profiles of the apply path).
    private var literalStatementCache: [UnsafeRawPointer: Statement] = [:]
    var savepointDepth = 0
    /// `SAVEPOINT` and `RELEASE` for each depth reached so far (`Transaction.swift`).
    struct SavepointStatements {
        let open: Statement
        let release: Statement
    }
    var savepointStatementsByDepth: [SavepointStatements] = []
    var rollbackHandler: (() -> Void)?
    /// Set by `transaction(durable: true)` (at any depth) until the outermost transaction commits.
    var durableCommitPending = false
    /// Inside `deferringDurableSync`: durable commits leave their sync to its end.
    var durableSyncDeferred = false
    /// A durable commit inside `deferringDurableSync` has not been synced yet.
    var durableSyncOwed = false
    /// Set by `checkpointInBackground`; stopped before the connection closes.
    var checkpointer: WALCheckpointer?
    /// Set by `truncateWALAfterCommit`: the WAL is to be emptied after the next commit.
    var walTruncationPending = false

    /// Opens (or, in `.readWrite` mode, creates) the database at `path`.
    ///
    /// Sets a 5 s busy timeout and `foreign_keys = ON`; file databases opened `.readWrite` are
    /// switched to WAL with `synchronous = NORMAL` (a power loss may drop the last commits but
    /// never corrupts; `transaction(durable: true)` keeps a commit through one) and
    /// `secure_delete = ON` (see `prepareFileForWriting`), and a new one gets pages of
    /// `newFilePageSize` bytes. Reads the schema before returning, so a file that is not a
    /// database (`SQLiteError.notADatabase`) or is damaged (`SQLiteError.corrupt`) fails here,
    /// not at the first query. `vfs` names a registered SQLite VFS to open the file through
    /// (tests put a fault-injecting file layer there); nil is the default one.
    ///
    /// `cipherKey` (32 bytes) opens the file encrypted page by page (`Database+Cipher.swift`): a
    /// new file is created so, an encrypted one is read with it. A plain file given a key
    /// opens read-only as it is, and `.readWrite` refuses it (`encryptPlainFile` converts it);
    /// an encrypted file opened without a key throws `SQLiteError.notADatabase` saying so.
    public init(path: String, mode: OpenMode = .readWrite, vfs: String? = nil, cipherKey: [UInt8]? = nil) throws {
        let (connection, connectionVFS) = try Self.open(path: path, mode: mode, vfs: vfs, cipherKey: cipherKey)
        self.connection = connection
        self.path = path
        self.mode = mode
        self.vfs = vfs
        self.connectionVFS = connectionVFS
        self.isEncrypted = connectionVFS != vfs
    }

    deinit {
        close()
    }

    /// Closes the connection; later calls throw `SQLiteError.misuse`. Idempotent.
    ///
    /// Statements still held elsewhere stay valid until released (`sqlite3_close_v2`); the
    /// connection's resources are freed when the last one is.
    public func close() {
        statementCache.removeAll()
        literalStatementCache.removeAll()
        savepointStatementsByDepth.removeAll()
        guard let connection else { return }
        if let checkpointer {
            sqlite3_wal_hook(connection, nil, nil)
            checkpointer.stop()
            self.checkpointer = nil
        }
        sqlite3_close_v2(connection)
        self.connection = nil
    }

    // MARK: Running SQL

    /// Runs one or more `;`-separated statements that take no parameters (schema, pragmas).
    public func execute(_ sql: String) throws {
        let connection = try openConnection()
        let resultCode = sqlite3_exec(connection, sql, nil, nil, nil)
        guard resultCode == SQLITE_OK else {
            throw SQLiteError(resultCode: resultCode, connection: connection, sql: sql)
        }
    }

    /// Runs a single statement with positional parameters `?` bound to `bindings`.
    ///
    /// Prepares the statement each time: in a loop, use `cachedStatement(_:)` and `run`.
    public func execute(_ sql: String, _ bindings: SQLValue...) throws {
        try prepare(sql).run(bindings)
    }

    /// Whether `sql` ends with a complete statement (a `;` outside any string, comment or
    /// trigger body), as SQLite's own shell decides where a typed statement ends.
    public static func isCompleteStatement(_ sql: String) -> Bool {
        sqlite3_complete(sql) != 0
    }

    /// Prepares a single statement; throws if `sql` holds none or more than one.
    public func prepare(_ sql: String) throws -> Statement {
        let handle = try Self.prepareHandle(sql, on: try openConnection(), persistent: false)
        return Statement(handle: handle, sql: sql)
    }

    /// A statement for `sql`, prepared once per connection and reset on every call.
    ///
    /// For hot paths; the SQL is a literal, so no value can be interpolated into it (bind them).
    /// The same object comes back for the same SQL, so do not ask for it again while still
    /// stepping through its rows.
    public func cachedStatement(_ sql: StaticString) throws -> Statement {
        guard sql.hasPointerRepresentation else { return try cachedStatement(dynamic: sql.description) }
        let key = UnsafeRawPointer(sql.utf8Start)
        if let statement = literalStatementCache[key] {
            statement.reset()
            return statement
        }
        let statement = try cachedStatement(dynamic: sql.description)
        literalStatementCache[key] = statement
        return statement
    }

    /// `cachedStatement(_:)` for SQL built at run time from a few fixed parts (a savepoint's
    /// name): the cache grows per distinct string.
    func cachedStatement(dynamic sql: String) throws -> Statement {
        if let statement = statementCache[sql] {
            statement.reset()
            return statement
        }
        let handle = try Self.prepareHandle(sql, on: try openConnection(), persistent: true)
        let statement = Statement(handle: handle, sql: sql)
        statementCache[sql] = statement
        return statement
    }

    /// What a cached statement counts while it runs (`sqlite3_stmt_status`).
    public enum StatementCounter {
        /// Rows stepped over in full scans of a table: a query that reads a whole table where an
        /// index would find its rows shows here with the table's size.
        case fullScanSteps
        /// Virtual-machine instructions: grows with every row a query reads, by an index or not.
        case virtualMachineSteps

        var code: Int32 {
            switch self {
            case .fullScanSteps: Int32(SQLITE_STMTSTATUS_FULLSCAN_STEP)
            case .virtualMachineSteps: Int32(SQLITE_STMTSTATUS_VM_STEP)
            }
        }
    }

    /// `counter` of each cached statement since it was prepared, by its SQL; statements at 0 are
    /// left out. How a test catches a query plan that grows with the store (speed itself belongs
    /// in benchmarks).
    public func statementCounts(_ counter: StatementCounter) -> [String: Int] {
        statementCache.reduce(into: [:]) { counts, entry in
            let count = sqlite3_stmt_status(entry.value.handle, counter.code, 0)
            if count > 0 { counts[entry.key] = Int(count) }
        }
    }

    /// Finalizes all cached statements (they are prepared again on next use).
    public func clearStatementCache() {
        statementCache.removeAll()
        literalStatementCache.removeAll()
    }

    /// The first column of the first row as `T`; `nil` when there is no row or it is `NULL`.
    ///
    /// Throws `SQLITE_MISMATCH` when the value has a storage class `T` does not accept, rather
    /// than hiding a wrong query behind `nil`.
    public func scalar<T: SQLValueConvertible>(
        _ sql: String, _ bindings: SQLValue..., as type: T.Type = T.self
    ) throws -> T? {
        let statement = try prepare(sql)
        try statement.bind(bindings)
        guard try statement.step() else { return nil }
        let value = statement.value(0)
        if let converted = T(sqlValue: value) { return converted }
        if value.isNull { return nil }
        throw SQLiteError(
            extendedCode: SQLITE_MISMATCH, message: "first column holds \(value), not a \(T.self)",
            sql: sql)
    }

    // MARK: Connection state

    /// The rowid of the last successful `INSERT` on this connection (0 if none, or closed).
    public var lastInsertRowID: Int64 {
        connection.map { sqlite3_last_insert_rowid($0) } ?? 0
    }

    /// Rows changed by the last `INSERT`, `UPDATE` or `DELETE` on this connection.
    public var changes: Int {
        connection.map { Int(sqlite3_changes64($0)) } ?? 0
    }

    /// Rows changed by every `INSERT`, `UPDATE` and `DELETE` on this connection since it was
    /// opened (whether this process wrote anything at all).
    public var totalChanges: Int {
        connection.map { Int(sqlite3_total_changes64($0)) } ?? 0
    }

    /// Whether a transaction is open (between `BEGIN` and `COMMIT`/`ROLLBACK`).
    public var isInTransaction: Bool {
        connection.map { sqlite3_get_autocommit($0) == 0 } ?? false
    }

    /// A number that changes when another connection (or process) commits to the file.
    ///
    /// Poll it to notice foreign writes cheaply; this connection's own commits do not change it.
    public var dataVersion: Int64 {
        get throws {
            let statement = try cachedStatement("PRAGMA data_version")
            defer { statement.reset() }
            guard try statement.step() else {
                throw SQLiteError(extendedCode: SQLITE_ERROR, message: "no data_version row")
            }
            return statement.int64(0)
        }
    }

    /// Copies the WAL into the database file and truncates it to zero bytes.
    ///
    /// Throws `SQLiteError.busy` if readers or a writer on other connections kept it from
    /// finishing; a no-op for databases not in WAL mode.
    public func checkpoint() throws {
        let connection = try openConnection()
        let resultCode = sqlite3_wal_checkpoint_v2(
            connection, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil)
        guard resultCode == SQLITE_OK else {
            throw SQLiteError(
                resultCode: resultCode, connection: connection,
                sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
    }

    /// Runs `body` with the syncs that durable transactions owe put off until it ends (returns
    /// or throws), then makes them, once: a caller with something to do first (a node sending
    /// its own new op to its peers, which need not wait for this disk) still returns only once
    /// the write is durable.
    public func deferringDurableSync<T>(_ body: () throws -> T) throws -> T {
        guard !durableSyncDeferred else { return try body() }
        durableSyncDeferred = true
        let result: Result<T, any Error> = Result { try body() }
        durableSyncDeferred = false
        if durableSyncOwed {
            durableSyncOwed = false
            try syncJournal()
        }
        return try result.get()
    }

    /// Makes every commit so far survive a power loss: syncs the WAL file (the journal, outside
    /// WAL mode) through the VFS, which is what `synchronous = FULL` does at each commit. A
    /// no-op for in-memory databases. `transaction(durable: true)` calls it after its commit.
    public func syncJournal() throws {
        let connection = try openConnection()
        let resultCode = parley_sqlite_sync_journal(connection)
        guard resultCode == SQLITE_OK else {
            throw SQLiteError(
                extendedCode: resultCode, message: "syncing the journal of \(path) to disk failed", sql: nil)
        }
    }

    /// Asks for the WAL to be checkpointed and truncated to zero bytes once the current (or
    /// next) transaction commits: a write that erased content wants its old page images gone
    /// from the `-wal` file too, where they stay after a checkpoint until new frames happen to
    /// overwrite them. Tried after each later commit until it succeeds (readers or another
    /// checkpoint on other connections make it fail with `SQLITE_BUSY` meanwhile).
    public func truncateWALAfterCommit() {
        walTruncationPending = true
    }

    /// Runs the truncation `truncateWALAfterCommit` asked for, if one is pending and no
    /// transaction is open; keeps it pending when another connection is in the way.
    func truncateWALIfPending() {
        guard walTruncationPending, !isInTransaction, let connection else { return }
        let resultCode = sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil)
        if resultCode == SQLITE_OK { walTruncationPending = false }
    }

    // MARK: Private

    func openConnection() throws -> OpaquePointer {
        guard let connection else {
            throw SQLiteError.misuse("database \(path) is closed; open a new Database")
        }
        return connection
    }

    /// Process-wide settings made once, before SQLite initializes (the first open does that):
    /// memory statistics off. They took a global mutex around every `sqlite3_malloc` and
    /// `sqlite3_free`, about 20,000 times in 6 s of one node at 60 writes/s, 1.5% of its
    /// instructions; nothing reads them (`sqlite3_memory_used`, a soft heap limit).
    static let processSettings: Void = {
        _ = parley_sqlite_memory_statistics_off()
    }()

    private static func open(path: String, mode: OpenMode, vfs requestedVFS: String?, cipherKey: [UInt8]?) throws -> (OpaquePointer, String?) {
        _ = Self.processSettings
        var vfs = requestedVFS
        var encrypt = false
        if path != ":memory:", !path.isEmpty {
            switch (fileFormat(at: path), cipherKey) {
            case (.encrypted, nil):
                throw SQLiteError(
                    extendedCode: SQLITE_NOTADB, message: "the database is encrypted; open it with its store key (the data directory's store.key) (\(path))")
            case (.plain, .some) where mode == .readWrite:
                throw SQLiteError.misuse("the database is not encrypted yet; convert it with encryptPlainFile first (\(path))")
            case (.encrypted, .some(let key)), (.empty, .some(let key)):
                vfs = try cipherVFS(key: key, over: requestedVFS)
                encrypt = true
            default:
                break
            }
        }
        // NOMUTEX: the single owner serializes calls, SQLite's own mutex would be pure overhead.
        var flags = SQLITE_OPEN_NOMUTEX
        switch mode {
        case .readWrite:
            flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
            keepPrivate(path)
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        }
        var handle: OpaquePointer?
        let resultCode =
            if let vfs { sqlite3_open_v2(path, &handle, flags, vfs) } else { sqlite3_open_v2(path, &handle, flags, nil) }
        guard let connection = handle else {
            throw SQLiteError(extendedCode: SQLITE_NOMEM, message: "out of memory opening \(path)")
        }
        do {
            guard resultCode == SQLITE_OK else {
                throw SQLiteError(resultCode: resultCode, connection: connection, sql: nil)
            }
            sqlite3_extended_result_codes(connection, 1)
            let timeoutCode = sqlite3_busy_timeout(connection, 5000)
            guard timeoutCode == SQLITE_OK else {
                throw SQLiteError(resultCode: timeoutCode, connection: connection, sql: nil)
            }
            try exec("PRAGMA foreign_keys = ON", on: connection)
            if encrypt {
                // Before the first page is written; temporary tables and sort spills in memory,
                // not in clear in a temporary file.
                reserveCipherBytes(connection)
                try exec("PRAGMA temp_store = MEMORY", on: connection)
            }
            // Opening is lazy: read the schema now so a garbage or corrupt file fails here.
            try exec("SELECT count(*) FROM sqlite_master", on: connection)
            let file = sqlite3_db_filename(connection, "main").map { String(cString: $0) } ?? ""
            if mode == .readWrite, !file.isEmpty {
                try prepareFileForWriting(connection)
            }
            return (connection, vfs)
        } catch {
            sqlite3_close_v2(connection)
            guard let error = error as? SQLiteError else { throw error }
            throw SQLiteError(
                extendedCode: error.extendedCode, message: "\(error.message) (\(path))",
                sql: error.sql)
        }
    }

    /// The page size of a database file this type creates (SQLite's default is 4096; a file
    /// keeps the size it was created with). A replica's commits are mostly one op each, and
    /// each op changes a page in five b-trees (the op, its chain index, the head, the message,
    /// its order index): a commit appends and checksums every changed page whole to the WAL.
    /// With 1 KiB pages that is a quarter of the bytes: half the instructions of writing the
    /// frames, and a third more single-post transactions a second. Ops, at a few hundred bytes,
    /// still fit a page.
    public static let newFilePageSize = 1024

    /// Refuses a silently read-only open, then switches to WAL with `synchronous = NORMAL`
    /// (a new file first gets its page size: WAL fixes it once set), and turns on
    /// `secure_delete`: content that a write frees (a row deleted or shrunk, a page put on the
    /// free list, an overflow page) is overwritten with zeros in the same write, so erased
    /// words do not linger in free space of the file. `ON` rather than `FAST`: `FAST` leaves
    /// freed pages as they were, and a long text spills into overflow pages that a delete frees.
    private static func prepareFileForWriting(_ connection: OpaquePointer) throws {
        if sqlite3_db_readonly(connection, "main") == 1 {
            throw SQLiteError(
                extendedCode: SQLITE_READONLY,
                message: "database file is not writable; fix its permissions or open it read-only")
        }
        // Ignored by SQLite once the file has pages.
        try exec("PRAGMA page_size = \(newFilePageSize)", on: connection)
        let sql = "PRAGMA journal_mode = WAL"
        let statement = Statement(
            handle: try prepareHandle(sql, on: connection, persistent: false), sql: sql)
        guard try statement.step(), statement.text(0).lowercased() == "wal" else {
            throw SQLiteError(
                extendedCode: SQLITE_CANTOPEN,
                message: "cannot switch to WAL journal mode; the directory must be writable",
                sql: sql)
        }
        statement.reset()
        try exec("PRAGMA synchronous = NORMAL", on: connection)
        try exec("PRAGMA secure_delete = ON", on: connection)
    }

    private static func exec(_ sql: String, on connection: OpaquePointer) throws {
        let resultCode = sqlite3_exec(connection, sql, nil, nil, nil)
        guard resultCode == SQLITE_OK else {
            throw SQLiteError(resultCode: resultCode, connection: connection, sql: sql)
        }
    }

    /// Prepares the first statement of `sql`; throws if there is none, or another one follows.
    static func prepareHandle(
        _ sql: String, on connection: OpaquePointer, persistent: Bool
    ) throws -> OpaquePointer {
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        var handle: OpaquePointer?
        var trailingStatement = false
        let resultCode = sql.withCString { start -> Int32 in
            var tail: UnsafePointer<CChar>?
            let resultCode = sqlite3_prepare_v3(connection, start, -1, flags, &handle, &tail)
            // Whatever follows the first statement may only be whitespace, comments or `;`.
            while resultCode == SQLITE_OK, let rest = tail, rest.pointee != 0 {
                var next: OpaquePointer?
                var nextTail: UnsafePointer<CChar>?
                let nextCode = sqlite3_prepare_v3(connection, rest, -1, 0, &next, &nextTail)
                if nextCode != SQLITE_OK || next != nil || nextTail == rest {
                    sqlite3_finalize(next)
                    trailingStatement = true
                    break
                }
                tail = nextTail
            }
            return resultCode
        }
        guard resultCode == SQLITE_OK else {
            throw SQLiteError(resultCode: resultCode, connection: connection, sql: sql)
        }
        guard let handle else {
            throw SQLiteError.misuse("no SQL statement to prepare", sql: sql)
        }
        guard !trailingStatement else {
            sqlite3_finalize(handle)
            throw SQLiteError.misuse(
                "more than one statement: prepare them one by one, "
                    + "or use execute(_:) without bindings",
                sql: sql)
        }
        return handle
    }
}
