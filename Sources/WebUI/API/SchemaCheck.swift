import Foundation
import Presentation
import Synchronization

/// Checks a request's values against the JSON Schema (2020-12) of its route: the schemas the
/// OpenAPI document publishes are the ones the server enforces, so the two cannot disagree.
/// It knows exactly the keywords in `keywords`; a test walks every route's schemas and fails on
/// any other, so a schema never says more than the server checks.
///
/// `maxLength`/`minLength` count Unicode scalars (code points), as JSON Schema does; `pattern` is
/// searched (not anchored unless the pattern anchors itself) with ICU in Unix-lines mode, where
/// `$` matches at the end or before a final `\n`, as in Python's `re` (the tester's engine).
enum SchemaCheck {
    static let keywords: Set<String> = [
        "type", "enum", "const", "required", "properties", "additionalProperties", "minProperties", "maxProperties", "minLength",
        "maxLength", "pattern", "minimum", "maximum", "items", "minItems", "maxItems", "anyOf",
        // Annotations: they say, they do not constrain.
        "description", "examples",
    ]

    /// The first way `value` (as `JSONSerialization` gives it) breaks `schema`, naming the place
    /// (`attachments[0].name`), or nil when it conforms.
    static func problem(_ value: Any, _ schema: JSON, at place: String) -> String? {
        guard case .object(let rules) = schema else { return nil }
        let shown = place.isEmpty ? "the body" : place
        if let type = rules["type"] {
            let types: [String] =
                switch type {
                case .string(let one): [one]
                case .array(let many): many.compactMap(\.stringValue)
                default: []
                }
            if !types.contains(where: { has(value, type: $0) }) {
                return "\(shown) must be \(types.map(article).joined(separator: " or "))"
            }
        }
        if case .array(let options) = rules["enum"], !options.contains(where: { equal(value, $0) }) {
            return "\(shown) must be one of \(options.map(\.text).joined(separator: ", "))"
        }
        if let constant = rules["const"], !equal(value, constant) { return "\(shown) must be \(constant.text)" }
        if let text = value as? String, let problem = stringProblem(text, rules, shown) { return problem }
        if let number = value as? NSNumber, !isBoolean(number) {
            if let minimum = rules["minimum"]?.doubleValue, number.doubleValue < minimum { return "\(shown) must be at least \(format(minimum))" }
            if let maximum = rules["maximum"]?.doubleValue, number.doubleValue > maximum { return "\(shown) must be at most \(format(maximum))" }
        }
        if let list = value as? [Any] {
            if let least = rules["minItems"]?.intValue, list.count < least { return "\(shown) needs at least \(least) item(s)" }
            if let most = rules["maxItems"]?.intValue, list.count > most { return "\(shown) holds at most \(most) items" }
            if let items = rules["items"] {
                for (index, item) in list.enumerated() {
                    if let problem = problem(item, items, at: "\(place)[\(index)]") { return problem }
                }
            }
        }
        if let object = value as? [String: Any], let problem = objectProblem(object, rules, place) { return problem }
        if case .array(let options) = rules["anyOf"], !options.contains(where: { problem(value, $0, at: place) == nil }) {
            let described = options.compactMap { $0["description"]?.stringValue }
            return "\(shown) must have " + (described.isEmpty ? "one of the documented forms" : described.joined(separator: ", or "))
        }
        return nil
    }

    private static func stringProblem(_ text: String, _ rules: [String: JSON], _ shown: String) -> String? {
        let length = text.unicodeScalars.count
        if let least = rules["minLength"]?.intValue, length < least { return "\(shown) must be at least \(least) character(s)" }
        if let most = rules["maxLength"]?.intValue, length > most { return "\(shown) must be at most \(most) characters" }
        if let pattern = rules["pattern"]?.stringValue, !matches(text, pattern) {
            let description = rules["description"]?.stringValue.map { ": \($0)" } ?? ""
            return "\(shown) has the wrong form\(description)"
        }
        return nil
    }

    private static func objectProblem(_ object: [String: Any], _ rules: [String: JSON], _ place: String) -> String? {
        let prefix = place.isEmpty ? "" : place + "."
        let shown = place.isEmpty ? "the body" : place
        if let least = rules["minProperties"]?.intValue, object.count < least {
            let names = rules["properties"]?.objectValue.map { $0.keys.sorted().joined(separator: ", ") } ?? ""
            return "\(shown) needs at least \(least) field(s)" + (names.isEmpty ? "" : " of \(names)")
        }
        if let most = rules["maxProperties"]?.intValue, object.count > most { return "\(shown) has more than \(most) fields" }
        if case .array(let required) = rules["required"] {
            for case .string(let field) in required where object[field] == nil { return "\(prefix)\(field) is missing" }
        }
        let properties = rules["properties"]?.objectValue ?? [:]
        for key in object.keys.sorted() {
            if let sub = properties[key] {
                if let problem = problem(object[key]!, sub, at: prefix + key) { return problem }
            } else if case .bool(false) = rules["additionalProperties"] {
                return "\(shown) has no field '\(key.prefix(40))'; its fields are \(properties.keys.sorted().joined(separator: ", "))"
            }
        }
        return nil
    }

    /// A path or query parameter (always text on the wire) against its schema: an `integer`
    /// schema takes decimal digits with an optional `-`.
    static func parameterProblem(_ text: String, _ schema: JSON, name: String) -> String? {
        if schema["type"]?.stringValue == "integer" {
            let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
            guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return "\(name) must be a whole number" }
            // Beyond Int's range: compare as a double, which keeps the sign and the magnitude.
            let number = Int(text).map { NSNumber(value: $0) } ?? NSNumber(value: Double(text) ?? 0)
            return problem(number, schema, at: name)
        }
        return problem(text, schema, at: name)
    }

    // MARK: Types and values

    static func isBoolean(_ number: NSNumber) -> Bool {
        // JSONSerialization's booleans are the NSNumbers with the `c` type code.
        String(cString: number.objCType) == "c"
    }

    static func has(_ value: Any, type: String) -> Bool {
        let number = value as? NSNumber
        let boolean = number.map(isBoolean) ?? false
        switch type {
        case "null": return value is NSNull
        case "string": return value is String
        case "boolean": return boolean
        // JSON Schema: an integer is any number with no fractional part (1.0 is one).
        case "integer": return number.map { !boolean && $0.doubleValue.isFinite && $0.doubleValue == $0.doubleValue.rounded() } ?? false
        case "number": return number.map { !boolean && $0.doubleValue.isFinite } ?? false
        case "array": return value is [Any]
        case "object": return value is [String: Any]
        default: return false
        }
    }

    private static func equal(_ value: Any, _ expected: JSON) -> Bool {
        switch expected {
        case .string(let text): return value as? String == text
        case .bool(let flag): return (value as? NSNumber).map { isBoolean($0) && $0.boolValue == flag } ?? false
        case .null: return value is NSNull
        case .integer(let number): return (value as? NSNumber).map { !isBoolean($0) && $0.doubleValue == Double(number) } ?? false
        default: return false
        }
    }

    private static func article(_ type: String) -> String {
        switch type {
        case "null": "null"
        case "integer", "array", "object": "an \(type)"
        default: "a \(type)"
        }
    }

    private static func format(_ value: Double) -> String { value == value.rounded() ? String(Int64(value)) : String(value) }

    // MARK: Patterns

    /// Compiled patterns, by their text (the API's schemas hold a handful); nil for one that
    /// does not compile. NSRegularExpression is immutable once made and Sendable.
    private static let compiled = Mutex<[String: NSRegularExpression?]>([:])

    private static func compile(_ pattern: String) -> NSRegularExpression? {
        try? NSRegularExpression(pattern: pattern, options: [.useUnixLineSeparators])
    }

    /// Whether `pattern` is found in `text`; a pattern that does not compile matches nothing
    /// (a test compiles every pattern of every route).
    static func matches(_ text: String, _ pattern: String) -> Bool {
        if pattern == RequestSchema.base64 { return isBase64(text) }
        let regex = compiled.withLock { cache in
            if let known = cache[pattern] { return known }
            let made = compile(pattern)
            cache[pattern] = made
            return made
        }
        guard let regex else { return false }
        return regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    static func compiles(_ pattern: String) -> Bool { compile(pattern) != nil }

    /// Whether `pattern` matches by its regex alone (for the test that the native checks agree).
    static func regexMatches(_ text: String, _ pattern: String) -> Bool {
        guard let regex = compile(pattern) else { return false }
        return regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    /// `RequestSchema.base64`, natively: groups of four of the alphabet, the last one perhaps
    /// `xx==` or `xxx=`; like the regex's `$`, one final line break is let through.
    static func isBase64(_ text: String) -> Bool {
        var bytes = Substring(text).utf8[...]
        if bytes.last == UInt8(ascii: "\n") { bytes = bytes.dropLast() }
        guard bytes.count % 4 == 0 else { return false }
        for _ in 0..<2 where bytes.last == UInt8(ascii: "=") { bytes = bytes.dropLast() }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "+"), UInt8(ascii: "/"):
                true
            default: false
            }
        }
    }
}

extension JSON {
    subscript(key: String) -> JSON? {
        guard case .object(let fields) = self else { return nil }
        return fields[key]
    }

    var stringValue: String? {
        guard case .string(let text) = self else { return nil }
        return text
    }

    var objectValue: [String: JSON]? {
        guard case .object(let fields) = self else { return nil }
        return fields
    }

    var intValue: Int? {
        switch self {
        case .integer(let value): Int(value)
        case .unsigned(let value): Int(exactly: value)
        case .number(let value): Int(exactly: value)
        default: nil
        }
    }

    var doubleValue: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .unsigned(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }
}
