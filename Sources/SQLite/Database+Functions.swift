import CSQLite

extension Database {
    /// A scalar SQL function: the arguments in, one value out. It runs inside SQLite's call, on
    /// the thread of the statement that called it.
    public typealias ScalarFunction = @Sendable ([SQLValue]) -> SQLValue

    /// Defines `name(arguments…)` on this connection, deterministic and innocuous (it reads and
    /// writes nothing, so SQLite may use it in views, indexes and queries from any source).
    /// `arity` −1 takes any number of arguments.
    public func defineFunction(_ name: String, arity: Int32, _ function: @escaping ScalarFunction) throws {
        let connection = try openConnection()
        let box = Unmanaged.passRetained(FunctionBox(function)).toOpaque()
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS
        // SQLite calls the destructor when the function is replaced or the connection closes,
        // and also when the definition fails, so the box is released on every path.
        let code = sqlite3_create_function_v2(connection, name, arity, flags, box, callFunction, nil, nil, releaseFunction)
        guard code == SQLITE_OK else { throw SQLiteError(resultCode: code, connection: connection, sql: nil) }
    }
}

/// Keeps a function's closure alive for SQLite, which holds only a raw pointer to it.
private final class FunctionBox: Sendable {
    let function: Database.ScalarFunction
    init(_ function: @escaping Database.ScalarFunction) { self.function = function }
}

/// The C callback for every defined function; at file scope so it carries no actor isolation.
private func callFunction(_ context: OpaquePointer?, _ count: Int32, _ values: UnsafeMutablePointer<OpaquePointer?>?) {
    guard let context, let data = sqlite3_user_data(context) else { return }
    let box = Unmanaged<FunctionBox>.fromOpaque(data).takeUnretainedValue()
    var arguments: [SQLValue] = []
    arguments.reserveCapacity(Int(count))
    for index in 0..<Int(count) {
        guard let value = values?[index] else {
            arguments.append(.null)
            continue
        }
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: arguments.append(.integer(sqlite3_value_int64(value)))
        case SQLITE_FLOAT: arguments.append(.real(sqlite3_value_double(value)))
        case SQLITE_TEXT: arguments.append(.text(sqlite3_value_text(value).map { String(cString: $0) } ?? ""))
        case SQLITE_BLOB:
            let length = Int(sqlite3_value_bytes(value))
            if let bytes = sqlite3_value_blob(value), length > 0 {
                arguments.append(.blob(Array(UnsafeRawBufferPointer(start: bytes, count: length))))
            } else {
                arguments.append(.blob([]))
            }
        default: arguments.append(.null)
        }
    }
    switch box.function(arguments) {
    case .null: sqlite3_result_null(context)
    case .integer(let number): sqlite3_result_int64(context, number)
    case .real(let number): sqlite3_result_double(context, number)
    case .text(let text): sqlite3_result_text(context, text, -1, parley_sqlite_transient())
    case .blob(let bytes): bytes.withUnsafeBytes { sqlite3_result_blob(context, $0.baseAddress, Int32($0.count), parley_sqlite_transient()) }
    }
}

/// Releases a function's box when SQLite drops the definition.
private func releaseFunction(_ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    Unmanaged<FunctionBox>.fromOpaque(data).release()
}
