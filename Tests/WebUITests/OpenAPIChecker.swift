import Foundation
import Testing

/// Checks responses against the server's own OpenAPI document: the status must be one the
/// document lists for that operation, and a JSON success body must match its schema (types,
/// required fields, enums, array items). Records which operations answered with success, so a
/// test can require that every documented operation was exercised.
// @unchecked: `succeeded` and `statusesSeen` are touched only by the test's task, one request at a time.
final class OpenAPIChecker: @unchecked Sendable {
    let document: [String: Any]
    private(set) var succeeded: Set<String> = []
    private(set) var statusesSeen: [String: Set<Int>] = [:]

    init(document: [String: Any]) { self.document = document }

    /// Every documented operation, as `METHOD /path/{template}`.
    var operations: Set<String> {
        let paths = document["paths"] as? [String: [String: Any]] ?? [:]
        return Set(paths.flatMap { path, methods in methods.keys.map { "\($0.uppercased()) \(path)" } })
    }

    func operation(_ method: String, _ template: String) -> [String: Any]? {
        ((document["paths"] as? [String: Any])?[template] as? [String: Any])?[method.lowercased()] as? [String: Any]
    }

    /// Checks `response` to `method template`; returns the problems found (empty when it conforms).
    func check(_ response: HTTPTestClient.Response, _ method: String, _ template: String) -> [String] {
        let key = "\(method) \(template)"
        guard let operation = operation(method, template) else { return ["\(key) is not in the OpenAPI document"] }
        statusesSeen[key, default: []].insert(response.status)
        let responses = operation["responses"] as? [String: Any] ?? [:]
        guard let documented = responses[String(response.status)] as? [String: Any] else {
            return ["\(key) answered \(response.status), not among the documented \(responses.keys.sorted()): \(response)"]
        }
        if (200..<300).contains(response.status) { succeeded.insert(key) }
        guard let content = documented["content"] as? [String: Any] else {
            return response.body.isEmpty ? [] : ["\(key) \(response.status) has a body but documents none"]
        }
        guard let json = content["application/json"] as? [String: Any], let schema = json["schema"] as? [String: Any] else { return [] }
        guard response.headers["content-type"]?.hasPrefix("application/json") == true else {
            return ["\(key) \(response.status) is documented as JSON but is \(response.headers["content-type"] ?? "untyped")"]
        }
        guard let value = try? JSONSerialization.jsonObject(with: Data(response.body), options: [.fragmentsAllowed]) else {
            return ["\(key) \(response.status) body is not JSON: \(response.text.prefix(200))"]
        }
        return validate(value, schema, at: key)
    }

    func validate(_ value: Any, _ schema: [String: Any], at place: String) -> [String] {
        if let reference = schema["$ref"] as? String {
            let name = String(reference.split(separator: "/").last ?? "")
            let target = ((document["components"] as? [String: Any])?["schemas"] as? [String: Any])?[name] as? [String: Any] ?? [:]
            return validate(value, target, at: place)
        }
        var problems: [String] = []
        let types: [String] = (schema["type"] as? String).map { [$0] } ?? (schema["type"] as? [String]) ?? []
        if !types.isEmpty && !types.contains(where: { Self.has(value, type: $0) }) {
            return ["\(place): \(String(describing: value).prefix(80)) is not \(types.joined(separator: " or "))"]
        }
        if let options = schema["enum"] as? [String], let text = value as? String, !options.contains(text) {
            problems.append("\(place): '\(text)' is not one of \(options)")
        }
        if let object = value as? [String: Any] {
            for field in schema["required"] as? [String] ?? [] where object[field] == nil {
                problems.append("\(place): the field '\(field)' is missing")
            }
            for (field, sub) in schema["properties"] as? [String: [String: Any]] ?? [:] {
                if let fieldValue = object[field] { problems += validate(fieldValue, sub, at: "\(place).\(field)") }
            }
        }
        if let array = value as? [Any], let items = schema["items"] as? [String: Any] {
            for (index, item) in array.enumerated() { problems += validate(item, items, at: "\(place)[\(index)]") }
        }
        return problems
    }

    static func has(_ value: Any, type: String) -> Bool {
        // JSONSerialization gives NSNumbers; its booleans are the ones with the `c` type code.
        let number = value as? NSNumber
        let isBoolean = number.map { String(cString: $0.objCType) == "c" } ?? false
        switch type {
        case "null": return value is NSNull
        case "string": return value is String
        case "boolean": return isBoolean
        case "integer": return number.map { !isBoolean && $0.doubleValue == $0.doubleValue.rounded() } ?? false
        case "number": return number != nil && !isBoolean
        case "array": return value is [Any]
        case "object": return value is [String: Any]
        default: return true
        }
    }
}
