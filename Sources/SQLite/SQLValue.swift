/// One SQLite value, as stored: SQLite has exactly these five storage classes.
///
/// Literals work where a value is expected: `try db.execute("… VALUES (?, ?)", 42, "text")`.
/// There is no unsigned integer class: `UInt64` is stored as its bit pattern in `.integer`, so
/// values above `Int64.max` compare and sort as negative numbers in SQL.
public enum SQLValue: Sendable, Equatable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

extension SQLValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}

extension SQLValue {
    /// The value of any convertible type; `nil` becomes `.null`.
    public init(_ value: some SQLValueConvertible) { self = value.sqlValue }

    /// Whether this is SQL `NULL`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

/// A Swift type that maps to and from one SQLite value.
///
/// `init?(sqlValue:)` returns `nil` for `NULL` and for values of another storage class: it does
/// not parse text into numbers. `Optional` maps `NULL` to `.none`.
public protocol SQLValueConvertible {
    /// The Swift value for `sqlValue`, or `nil` when it has another storage class or is `NULL`.
    init?(sqlValue: SQLValue)
    /// The value to store.
    var sqlValue: SQLValue { get }
}

extension SQLValue: SQLValueConvertible {
    public init?(sqlValue: SQLValue) { self = sqlValue }
    public var sqlValue: SQLValue { self }
}

extension Int64: SQLValueConvertible {
    public init?(sqlValue: SQLValue) {
        guard case .integer(let value) = sqlValue else { return nil }
        self = value
    }
    public var sqlValue: SQLValue { .integer(self) }
}

extension Int: SQLValueConvertible {
    /// `nil` also when the stored integer does not fit (only on 32-bit platforms).
    public init?(sqlValue: SQLValue) {
        guard case .integer(let value) = sqlValue, let int = Int(exactly: value) else { return nil }
        self = int
    }
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Int32: SQLValueConvertible {
    /// `nil` also when the stored integer does not fit in 32 bits.
    public init?(sqlValue: SQLValue) {
        guard case .integer(let value) = sqlValue, let int = Int32(exactly: value) else {
            return nil
        }
        self = int
    }
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension UInt64: SQLValueConvertible {
    /// Stored as the `Int64` with the same bit pattern: `UInt64.max` reads back as `-1` in SQL.
    public init?(sqlValue: SQLValue) {
        guard case .integer(let value) = sqlValue else { return nil }
        self = UInt64(bitPattern: value)
    }
    public var sqlValue: SQLValue { .integer(Int64(bitPattern: self)) }
}

extension Double: SQLValueConvertible {
    /// Accepts integers too: SQLite returns `1` rather than `1.0` from untyped expressions.
    public init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .real(let value): self = value
        case .integer(let value): self = Double(value)
        default: return nil
        }
    }
    public var sqlValue: SQLValue { .real(self) }
}

extension Bool: SQLValueConvertible {
    /// SQLite has no boolean: stored as 0 or 1; any non-zero integer reads as `true`.
    public init?(sqlValue: SQLValue) {
        guard case .integer(let value) = sqlValue else { return nil }
        self = value != 0
    }
    public var sqlValue: SQLValue { .integer(self ? 1 : 0) }
}

extension String: SQLValueConvertible {
    public init?(sqlValue: SQLValue) {
        guard case .text(let value) = sqlValue else { return nil }
        self = value
    }
    public var sqlValue: SQLValue { .text(self) }
}

extension Array: SQLValueConvertible where Element == UInt8 {
    /// Only blobs convert: text is not silently reinterpreted as bytes.
    public init?(sqlValue: SQLValue) {
        guard case .blob(let value) = sqlValue else { return nil }
        self = value
    }
    public var sqlValue: SQLValue { .blob(self) }
}

extension Optional: SQLValueConvertible where Wrapped: SQLValueConvertible {
    /// `NULL` is `.some(.none)`; a value of the wrong storage class is still `nil`.
    public init?(sqlValue: SQLValue) {
        if case .null = sqlValue {
            self = .none
        } else if let value = Wrapped(sqlValue: sqlValue) {
            self = .some(value)
        } else {
            return nil
        }
    }
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
}
