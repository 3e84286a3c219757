import CSQLite

/// A failed SQLite call: the result code, SQLite's own message and the SQL that was running.
///
/// Match the primary code in `catch`
/// (`catch let error as SQLiteError where error.code == SQLiteError.busy`); `extendedCode` tells
/// apart the variants (`SQLITE_CONSTRAINT_UNIQUE`, `SQLITE_IOERR_FSYNC`, …) when that matters.
/// Errors raised by this module itself (misuse, unknown migrations) use `SQLITE_MISUSE` or
/// `SQLITE_ERROR` with a message that names the problem and the fix.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// The primary result code (`SQLITE_CONSTRAINT` = 19, `SQLITE_BUSY` = 5, …).
    public let code: Int32
    /// The extended result code; equal to `code` when SQLite has nothing more specific.
    public let extendedCode: Int32
    /// SQLite's message (`sqlite3_errmsg`), or this module's own explanation.
    public let message: String
    /// The statement that failed, when there was one.
    public let sql: String?

    /// Creates an error; the primary code is derived from the extended one.
    public init(extendedCode: Int32, message: String, sql: String? = nil) {
        self.code = extendedCode & 0xFF
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    /// Another connection or process holds the lock longer than the busy timeout (5 s).
    public static let busy: Int32 = SQLITE_BUSY
    /// A `UNIQUE`, `NOT NULL`, `CHECK`, foreign-key or `STRICT` type constraint failed.
    public static let constraint: Int32 = SQLITE_CONSTRAINT
    /// A page of an encrypted file failed its authentication check (`SQLITE_IOERR_DATA`): changed
    /// on disk, or read with another key.
    public static let pageFailedCheck: Int32 = SQLITE_IOERR | (32 << 8)
    /// The database file is damaged; restore it from a copy or peers.
    public static let corrupt: Int32 = SQLITE_CORRUPT
    /// The file exists but is not an SQLite database (wrong path, or overwritten).
    public static let notADatabase: Int32 = SQLITE_NOTADB
    /// A write on a connection opened `.readOnly`, or on a file the process may not write.
    public static let readOnly: Int32 = SQLITE_READONLY
    /// The disk is full.
    public static let full: Int32 = SQLITE_FULL
    /// The file (or its directory, for a new file or the WAL) cannot be opened or created.
    public static let cantOpen: Int32 = SQLITE_CANTOPEN
    /// An API used the wrong way: a closed database, a wrong number of bindings, …
    public static let misuse: Int32 = SQLITE_MISUSE
    /// A generic SQL error (syntax, missing table), also used for unknown migrations.
    public static let error: Int32 = SQLITE_ERROR

    /// `SQLite error 19 (constraint): UNIQUE constraint failed: t.x — in `INSERT …``
    public var description: String {
        var text = "SQLite error \(code) (\(Self.name(of: code))): \(message)"
        if let sql { text += " — in `\(sql)`" }
        return text
    }

    /// The lowercase name of a primary result code, as in the `SQLITE_` constants.
    static func name(of code: Int32) -> String {
        switch code {
        case SQLITE_OK: "ok"
        case SQLITE_ERROR: "error"
        case SQLITE_INTERNAL: "internal"
        case SQLITE_PERM: "perm"
        case SQLITE_ABORT: "abort"
        case SQLITE_BUSY: "busy"
        case SQLITE_LOCKED: "locked"
        case SQLITE_NOMEM: "nomem"
        case SQLITE_READONLY: "readonly"
        case SQLITE_INTERRUPT: "interrupt"
        case SQLITE_IOERR: "ioerr"
        case SQLITE_CORRUPT: "corrupt"
        case SQLITE_NOTFOUND: "notfound"
        case SQLITE_FULL: "full"
        case SQLITE_CANTOPEN: "cantopen"
        case SQLITE_PROTOCOL: "protocol"
        case SQLITE_EMPTY: "empty"
        case SQLITE_SCHEMA: "schema"
        case SQLITE_TOOBIG: "toobig"
        case SQLITE_CONSTRAINT: "constraint"
        case SQLITE_MISMATCH: "mismatch"
        case SQLITE_MISUSE: "misuse"
        case SQLITE_NOLFS: "nolfs"
        case SQLITE_AUTH: "auth"
        case SQLITE_FORMAT: "format"
        case SQLITE_RANGE: "range"
        case SQLITE_NOTADB: "notadb"
        case SQLITE_NOTICE: "notice"
        case SQLITE_WARNING: "warning"
        case SQLITE_ROW: "row"
        case SQLITE_DONE: "done"
        default: "unknown"
        }
    }
}

extension SQLiteError {
    /// The error a connection reports for `resultCode`, with its current message.
    ///
    /// Read it right after the failing call: the next call on the connection replaces the message.
    init(resultCode: Int32, connection: OpaquePointer?, sql: String?) {
        let message: String
        if let connection, let text = sqlite3_errmsg(connection) {
            message = String(cString: text)
        } else if let text = sqlite3_errstr(resultCode) {
            message = String(cString: text)
        } else {
            message = "unknown error"
        }
        self.init(extendedCode: resultCode, message: message, sql: sql)
    }

    /// A misuse detected by this module before reaching SQLite.
    static func misuse(_ message: String, sql: String? = nil) -> SQLiteError {
        SQLiteError(extendedCode: SQLITE_MISUSE, message: message, sql: sql)
    }
}
