/// A JSON value, written with sorted keys and two-space indentation.
///
/// `--json` output is a contract (docs/DESIGN.md §6.1): scripts and tests read field names and types, and
/// a stable key order makes outputs diffable. A tiny encoder of its own gives exact control over
/// that and over 64-bit integers (HLCs exceed 2^53, where a `Double` would round them).
public enum JSON: Equatable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case unsigned(UInt64)
    case number(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    /// `.string(text)`, or `.null` for nil.
    public static func optional(_ text: String?) -> JSON { text.map { .string($0) } ?? .null }

    /// The document text (no trailing newline).
    public var text: String {
        var out = ""
        write(to: &out, indent: 0)
        return out
    }

    private func write(to out: inout String, indent: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .integer(let value): out += String(value)
        case .unsigned(let value): out += String(value)
        case .number(let value): out += value.isFinite ? Self.number(value) : "null"
        case .string(let value): Self.quote(value, to: &out)
        case .array(let items):
            guard !items.isEmpty else { out += "[]"; return }
            out += "[\n"
            for (index, item) in items.enumerated() {
                out += String(repeating: "  ", count: indent + 1)
                item.write(to: &out, indent: indent + 1)
                out += index == items.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: "  ", count: indent) + "]"
        case .object(let fields):
            guard !fields.isEmpty else { out += "{}"; return }
            out += "{\n"
            let keys = fields.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            for (index, key) in keys.enumerated() {
                out += String(repeating: "  ", count: indent + 1)
                Self.quote(key, to: &out)
                out += ": "
                fields[key]!.write(to: &out, indent: indent + 1)
                out += index == keys.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: "  ", count: indent) + "}"
        }
    }

    /// Shortest round-trip text of a finite double; integral values keep no `.0` noise beyond
    /// what Swift prints (`52.0` stays a valid JSON number).
    private static func number(_ value: Double) -> String {
        String(value)
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped, everything
    /// else (emoji included) as UTF-8.
    private static func quote(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
