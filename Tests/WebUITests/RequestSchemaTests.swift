import Foundation
import Presentation
import Testing

@testable import WebUI

/// The request schemas are the contract: every route's inputs have one, the checker knows every
/// keyword they use, their character classes are Unicode's, and the checker applies them.
@Suite struct RequestSchemaTests {
    /// Every schema a request meets: path and query parameters and bodies, with where it is.
    static var requestSchemas: [(String, JSON)] {
        Route.all.flatMap { route in
            let name = "\(route.method) \(route.path)"
            return route.pathParameters.map { ("\(name) {\($0)}", Route.pathSchemas[$0] ?? .null) }
                + route.query.map { ("\(name) ?\($0.name)", $0.schema) } + (route.requestBody.map { [("\(name) body", $0)] } ?? [])
        }
    }

    /// Every keyword in `schema` (the keys of its objects, except property names).
    static func keywords(_ schema: JSON, into found: inout [String: JSON]) {
        guard case .object(let fields) = schema else { return }
        for (key, value) in fields {
            found[key] = value
            switch key {
            case "properties": for sub in value.objectValue?.values ?? [:].values { keywords(sub, into: &found) }
            case "anyOf": if case .array(let options) = value { for option in options { keywords(option, into: &found) } }
            case "items": keywords(value, into: &found)
            default: break
            }
        }
    }

    @Test func everyInputHasASchema_madeOnlyOfKeywordsTheServerChecks() {
        for route in Route.all {
            for name in route.pathParameters {
                #expect(Route.pathSchemas[name] != nil, "\(route.method) \(route.path): the path parameter {\(name)} has no schema in Route.pathSchemas")
            }
        }
        for (place, schema) in Self.requestSchemas {
            var found: [String: JSON] = [:]
            Self.keywords(schema, into: &found)
            #expect(!found.isEmpty, "\(place) has no schema")
            let unknown = Set(found.keys).subtracting(SchemaCheck.keywords)
            #expect(unknown.isEmpty, "\(place) uses keywords the server does not check: \(unknown.sorted())")
            if let pattern = found["pattern"]?.stringValue { #expect(SchemaCheck.compiles(pattern), "\(place): the pattern \(pattern) does not compile") }
        }
    }

    /// The classes the patterns use are Unicode's White_Space (and Cc), scalar for scalar: what
    /// the handlers trim (`Text.trimmed`) is exactly what the schemas call white space.
    @Test func theCharacterClasses_areUnicodesWhiteSpaceAndControlCharacters() {
        var mismatches: [String] = []
        // White_Space and Cc lie in the Basic Multilingual Plane; a few scalars beyond it stand for the rest.
        for value in Array(UInt32(0)...0xFFFF) + [0x10000, 0x1F44D, 0xE0001, 0x10FFFF] {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let text = String(scalar)
            let space = scalar.properties.isWhitespace
            let control = scalar.properties.generalCategory == .control
            if SchemaCheck.matches(text, "^[\(RequestSchema.whiteSpace)]$") != space { mismatches.append(String(format: "U+%04X white space", value)) }
            if SchemaCheck.matches(text, "^[\(RequestSchema.spaceOrControl)]$") != (space || control) {
                mismatches.append(String(format: "U+%04X space or control", value))
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(20))")
    }

    @Test func theChecker_appliesEachKeyword_andNamesTheField() throws {
        func check(_ json: String, _ schema: JSON) -> String? {
            let value = try! JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])
            return SchemaCheck.problem(value, schema, at: "")
        }
        let profile = RequestSchema.updateProfile
        #expect(check(#"{"nick": "bob"}"#, profile) == nil)
        #expect(check(#"{}"#, profile)?.contains("at least 1 field") == true)
        #expect(check(#"{"nick": null}"#, profile) == "nick must be a string")
        #expect(check(#"{"nick": "has space"}"#, profile)?.hasPrefix("nick has the wrong form") == true)
        #expect(check(#"{"nick": "bob", "colour": "red"}"#, profile)?.contains("no field 'colour'") == true)
        #expect(check(#"{"presence": "asleep"}"#, profile)?.hasPrefix("presence must be one of") == true)
        let post = RequestSchema.post
        #expect(check(#"{"text": "hi"}"#, post) == nil)
        #expect(check(#"{"text": " \n"}"#, post)?.contains("text that is not only white space") == true)
        #expect(check(#"{"text": "", "attachments": [{"name": "a", "data": ""}], "location": {"lat": 1, "lon": 2}}"#, post) == nil)
        // The store refuses an op without text or files: a place alone is not a message.
        #expect(check(#"{"location": {"lat": 1, "lon": 2}}"#, post) != nil)
        #expect(check(#"{"text": "x", "location": {"lat": 91, "lon": 2}}"#, post) == "location.lat must be at most 90")
        #expect(check(#"{"attachments": [{"name": "a", "data": "not base64!"}]}"#, post)?.hasPrefix("attachments[0].data has the wrong form") == true)
        #expect(check(#"{"attachments": [{"name": "a", "data": "aGk="}]}"#, post) == nil)
        #expect(check(#"{"text": true}"#, post) == "text must be a string")
        let task = RequestSchema.updateTask
        #expect(check(#"{"owner": null}"#, task) == nil)
        #expect(check(#"{"status": "done"}"#, task)?.hasPrefix("status must be one of") == true)
        let id = try #require(Route.pathSchemas["message"])
        #expect(SchemaCheck.parameterProblem(String(repeating: "a", count: 52), id, name: "message") == nil)
        #expect(SchemaCheck.parameterProblem(String(repeating: "A", count: 52), id, name: "message") == nil)
        // 52 characters carry 256 bits and 4 zero bits: the last character is a or q.
        #expect(SchemaCheck.parameterProblem(String(repeating: "a", count: 51) + "b", id, name: "message") != nil)
        #expect(SchemaCheck.parameterProblem("0", id, name: "message")?.hasPrefix("message must be at least 52") == true)
        let index = try #require(Route.pathSchemas["index"])
        #expect(SchemaCheck.parameterProblem("1", index, name: "index") == nil)
        #expect(SchemaCheck.parameterProblem("0", index, name: "index") == "index must be at least 1")
        #expect(SchemaCheck.parameterProblem("99999999999999999999999", index, name: "index") == "index must be at most 16")
        #expect(SchemaCheck.parameterProblem("1.5", index, name: "index") == "index must be a whole number")
        let room = try #require(Route.pathSchemas["room"])
        #expect(SchemaCheck.parameterProblem("#Café", room, name: "room") == nil)
        #expect(SchemaCheck.parameterProblem("a#b", room, name: "room") != nil)
        #expect(SchemaCheck.parameterProblem("a\u{2003}b", room, name: "room") != nil)
    }

    /// The native base64 check says what its regex says (the regex alone runs out on megabytes).
    @Test func theNativeBase64Check_agreesWithItsPattern() {
        var samples = ["", "\n", "aGk=", "aGk=\n", "aGk", "aGk==", "aG==", "aGVsbG8=", "a===", "====", "ab=c", "aGk=\n\n", "aGk\r", "ab+/", "ab-_"]
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("AZaz09+/=\n-")
        for _ in 0..<2000 {
            samples.append(String((0..<Int.random(in: 0...9, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }))
        }
        for sample in samples {
            #expect(SchemaCheck.isBase64(sample) == SchemaCheck.regexMatches(sample, RequestSchema.base64), "\(sample.debugDescription)")
        }
    }
}
