import Foundation
import Wire

/// A request's JSON object, read field by field with a 400 that names the field when a field is
/// missing or of the wrong type. `Route.validate` has checked it against the route's schema
/// before a handler reads it; handlers check what a schema cannot say (a byte limit, an id that is
/// not a key), with statuses other than 400.
// @unchecked: the fields are JSONSerialization's values (strings, numbers, arrays, dictionaries,
// NSNull), never changed after parsing.
struct RequestBody: @unchecked Sendable {
    private let fields: [String: Any]

    init(_ request: HTTPRequest) throws(WebError) {
        guard !request.body.isEmpty else { throw .badRequest("the request needs a JSON object body") }
        // JSON is UTF-8 (RFC 8259 §8.1); text in any other encoding would be stored changed.
        if let offset = UTF8Validation.firstInvalidOffset(request.body) {
            throw .badRequest(
                "the body is not valid UTF-8 (byte \(UTF8Validation.hex(request.body[offset])) at offset \(offset)); send JSON text in UTF-8")
        }
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(request.body), options: [.fragmentsAllowed])
        } catch {
            let error = error as NSError
            let detail = error.userInfo[NSDebugDescriptionErrorKey] as? String ?? error.localizedDescription
            throw .badRequest("the body is not valid JSON: \(detail)")
        }
        guard let object = parsed as? [String: Any] else { throw .badRequest("the body must be a JSON object") }
        fields = object
    }

    func has(_ key: String) -> Bool { fields[key] != nil }

    /// Whether the field is present and `null`.
    func isNull(_ key: String) -> Bool { fields[key] is NSNull }

    func string(_ key: String) throws(WebError) -> String? {
        guard let value = fields[key], !(value is NSNull) else { return nil }
        guard let text = value as? String else { throw .badRequest("\(key) must be a string") }
        return text
    }

    func requiredString(_ key: String) throws(WebError) -> String {
        guard let text = try string(key) else { throw .badRequest("\(key) is missing") }
        return text
    }

    func bool(_ key: String) throws(WebError) -> Bool? {
        guard let value = fields[key], !(value is NSNull) else { return nil }
        // On Linux a JSON 1 casts to Bool too: ask the number what it was parsed as.
        guard let number = value as? NSNumber, SchemaCheck.isBoolean(number) else {
            throw .badRequest("\(key) must be true or false")
        }
        return number.boolValue
    }

    func number(_ key: String) throws(WebError) -> Double? {
        guard let value = fields[key], !(value is NSNull) else { return nil }
        guard let number = value as? NSNumber, !SchemaCheck.isBoolean(number) else { throw .badRequest("\(key) must be a number") }
        return number.doubleValue
    }

    func strings(_ key: String) throws(WebError) -> [String]? {
        guard let value = fields[key], !(value is NSNull) else { return nil }
        guard let list = value as? [Any], let texts = list as? [String], texts.count == list.count else {
            throw .badRequest("\(key) must be an array of strings")
        }
        return texts
    }

    func objects(_ key: String) throws(WebError) -> [[String: Any]]? {
        guard let value = fields[key], !(value is NSNull) else { return nil }
        guard let list = value as? [Any], let objects = list as? [[String: Any]], objects.count == list.count else {
            throw .badRequest("\(key) must be an array of objects")
        }
        return objects
    }

    func object(_ key: String) throws(WebError) -> [String: Any]? {
        guard let value = fields[key], !(value is NSNull) else { return nil }
        guard let object = value as? [String: Any] else { throw .badRequest("\(key) must be an object") }
        return object
    }
}

extension RequestBody {
    /// The whole object (for a body that is itself a file).
    var object: [String: Any] { fields }
}
