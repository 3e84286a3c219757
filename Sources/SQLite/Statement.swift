import CSQLite

/// A prepared statement; finalizes itself in `deinit`.
///
/// Belongs to the connection that prepared it and shares its rule: one owner, never used from
/// two threads at once. Column getters read the current row, so call them only after `step()`
/// returned `true`; the values they return are copies and stay valid after the next step.
/// A statement that is not reset keeps its read snapshot open (and in WAL mode blocks
/// checkpoints), which is why `run` and `rows` always reset when they finish.
public final class Statement {
    /// The SQL this statement was prepared from, as given.
    public let sql: String
    let handle: OpaquePointer
    private let parameterCount: Int32

    init(handle: OpaquePointer, sql: String) {
        self.handle = handle
        self.sql = sql
        self.parameterCount = sqlite3_bind_parameter_count(handle)
    }

    deinit {
        sqlite3_finalize(handle)
    }

    // MARK: Binding and stepping

    /// Resets the statement and binds `values` to its parameters, 1-based and in order.
    ///
    /// Throws `SQLiteError.misuse` unless there is exactly one value per parameter, so every
    /// parameter is always rebound and no value lingers from the previous execution. Text and
    /// blobs are copied once, by SQLite.
    public func bind(_ values: [SQLValue]) throws {
        sqlite3_reset(handle)
        guard values.count == Int(parameterCount) else {
            throw SQLiteError.misuse(
                "statement has \(parameterCount) parameter(s) but \(values.count) value(s) "
                    + "were bound",
                sql: sql)
        }
        var index: Int32 = 1
        for value in values {
            let resultCode = bind(value, at: index)
            guard resultCode == SQLITE_OK else { throw error(resultCode) }
            index += 1
        }
    }

    /// Resets the statement and binds `values` to its parameters, 1-based and in order.
    public func bind(_ values: SQLValue...) throws {
        try bind(values)
    }

    /// Advances to the next row: `true` when a row is available, `false` when done.
    ///
    /// On error (a constraint, `SQLITE_BUSY`, …) the statement is reset before the error is
    /// thrown, so a failed statement never keeps its read snapshot open.
    public func step() throws -> Bool {
        let resultCode = sqlite3_step(handle)
        switch resultCode {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let failure = error(resultCode)
            sqlite3_reset(handle)
            throw failure
        }
    }

    /// Rewinds the statement so it can run again; keeps the bindings.
    ///
    /// Never throws: the error of the last step, which `sqlite3_reset` repeats, was already thrown.
    public func reset() {
        sqlite3_reset(handle)
    }

    /// Binds `values`, steps to completion (ignoring any rows) and resets.
    public func run(_ values: SQLValue...) throws {
        try run(values)
    }

    /// Binds `values`, steps to completion (ignoring any rows) and resets.
    public func run(_ values: [SQLValue]) throws {
        try bind(values)
        while try step() {}
        sqlite3_reset(handle)
    }

    /// Binds `values`, maps every row with `map` and resets.
    ///
    /// `@inlinable` (as `firstRow`): specialized where it is called, a row's `append` is not a
    /// generic call that looks up the array's type metadata at run time (on Linux a hash-table
    /// lookup for every array grown), on every op's path.
    @inlinable
    public func rows<T>(_ values: SQLValue..., map: (Statement) throws -> T) throws -> [T] {
        try rows(values, map: map)
    }

    /// Binds `values`, maps every row with `map` and resets.
    @inlinable
    public func rows<T>(_ values: [SQLValue], map: (Statement) throws -> T) throws -> [T] {
        try bind(values)
        defer { reset() }
        var result: [T] = []
        while try step() {
            result.append(try map(self))
        }
        return result
    }

    /// Binds `values`, maps the first row with `map` (nil when there is none) and resets: a
    /// one-row lookup (a head, a row id, a count) without building an array of rows.
    @inlinable
    public func firstRow<T>(_ values: SQLValue..., map: (Statement) throws -> T) throws -> T? {
        try bind(values)
        defer { reset() }
        return try step() ? map(self) : nil
    }

    /// Binds `values` and calls `body` for each row without collecting them, then resets.
    ///
    /// For large results: memory stays bounded. `body` must not rebind or reset this statement.
    public func forEachRow(_ values: [SQLValue] = [], _ body: (Statement) throws -> Void) throws {
        try bind(values)
        defer { sqlite3_reset(handle) }
        while try step() {
            try body(self)
        }
    }

    /// Binds `values` and calls `body` for each row until it returns false, then resets: a result
    /// read only as far as it is needed.
    public func readRows(_ values: [SQLValue] = [], while body: (Statement) throws -> Bool) throws {
        try bind(values)
        defer { sqlite3_reset(handle) }
        while try step(), try body(self) {}
    }

    // MARK: Columns of the current row (0-based)

    /// The number of columns in each row (0 for statements that return none).
    public var columnCount: Int32 { sqlite3_column_count(handle) }

    /// The name of column `i`, as given by `AS` or derived by SQLite.
    public func columnName(_ i: Int32) -> String {
        sqlite3_column_name(handle, i).map { String(cString: $0) } ?? ""
    }

    /// Column `i` as an integer; `NULL` reads as 0, text and reals are converted by SQLite.
    public func int64(_ i: Int32) -> Int64 {
        sqlite3_column_int64(handle, i)
    }

    /// Column `i` as an `Int`; `NULL` reads as 0.
    public func int(_ i: Int32) -> Int {
        Int(truncatingIfNeeded: sqlite3_column_int64(handle, i))
    }

    /// Column `i` as a `Double`; `NULL` reads as 0.
    public func double(_ i: Int32) -> Double {
        sqlite3_column_double(handle, i)
    }

    /// Column `i` as UTF-8 text; `NULL` reads as `""` (use `isNull` to tell them apart).
    public func text(_ i: Int32) -> String {
        // sqlite3_column_text must come before sqlite3_column_bytes (sqlite.org/c3ref/column_blob).
        guard let bytes = sqlite3_column_text(handle, i) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, i))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// Column `i` as bytes; `NULL` and the empty blob both read as `[]`.
    public func blob(_ i: Int32) -> [UInt8] {
        withUnsafeBlob(i) { [UInt8]($0) }
    }

    /// Calls `body` with the bytes of column `i` without copying them.
    ///
    /// The buffer is valid only inside `body`, and only until the statement steps or resets.
    public func withUnsafeBlob<R>(
        _ i: Int32, _ body: (UnsafeRawBufferPointer) throws -> R
    ) rethrows
        -> R
    {
        guard let bytes = sqlite3_column_blob(handle, i) else {
            return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        let count = Int(sqlite3_column_bytes(handle, i))
        return try body(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// Whether column `i` is `NULL`.
    public func isNull(_ i: Int32) -> Bool {
        sqlite3_column_type(handle, i) == SQLITE_NULL
    }

    /// Column `i` in its own storage class (an empty blob stays `.blob([])`, not `.null`).
    public func value(_ i: Int32) -> SQLValue {
        switch sqlite3_column_type(handle, i) {
        case SQLITE_INTEGER: .integer(sqlite3_column_int64(handle, i))
        case SQLITE_FLOAT: .real(sqlite3_column_double(handle, i))
        case SQLITE_TEXT: .text(text(i))
        case SQLITE_BLOB: .blob(blob(i))
        default: .null
        }
    }

    /// Column `i` converted to `T`; `nil` for `NULL` or another storage class (see
    /// `SQLValueConvertible`).
    public func column<T: SQLValueConvertible>(_ i: Int32, as type: T.Type = T.self) -> T? {
        T(sqlValue: value(i))
    }

    // MARK: Private

    private func bind(_ value: SQLValue, at index: Int32) -> Int32 {
        switch value {
        case .null:
            return sqlite3_bind_null(handle, index)
        case .integer(let integer):
            return sqlite3_bind_int64(handle, index, integer)
        case .real(let real):
            return sqlite3_bind_double(handle, index, real)
        case .text(var text):
            // Native strings are contiguous UTF-8: no copy before SQLite's own (SQLITE_TRANSIENT).
            return text.withUTF8 { utf8 in
                guard let base = utf8.baseAddress, !utf8.isEmpty else {
                    return sqlite3_bind_text(handle, index, "", 0, parley_sqlite_transient())
                }
                return sqlite3_bind_text64(
                    handle, index, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self),
                    UInt64(utf8.count), parley_sqlite_transient(), UInt8(SQLITE_UTF8))
            }
        case .blob(let bytes):
            return bytes.withUnsafeBytes { raw in
                // A nil pointer would bind NULL; an empty blob must stay a blob.
                guard let base = raw.baseAddress, !raw.isEmpty else {
                    return sqlite3_bind_zeroblob(handle, index, 0)
                }
                return sqlite3_bind_blob64(
                    handle, index, base, UInt64(raw.count), parley_sqlite_transient())
            }
        }
    }

    private func error(_ resultCode: Int32) -> SQLiteError {
        SQLiteError(resultCode: resultCode, connection: sqlite3_db_handle(handle), sql: sql)
    }
}
