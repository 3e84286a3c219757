import Presentation
import Replica

/// One endpoint of the JSON API: how it is matched, what it does, and what the OpenAPI document
/// says about it. The document is made from this table, and the router serves exactly this
/// table, so the two cannot drift apart.
struct Route: Sendable {
    typealias Handler = @Sendable (Call) async throws -> HTTPReply

    let method: String
    /// `/api/partitions/{partition}/messages`: literal segments and `{name}` parameters.
    let path: String
    let summary: String
    /// Query parameters, each optional, with their schemas.
    var query: [QueryParameter] = []
    /// The request body's schema (a JSON object), if it takes one (then the body is required).
    var requestBody: JSON? = nil
    /// The success status and its schema (nil: no body, or bytes when `contentTypes` is not JSON).
    let success: Int
    var response: JSON? = nil
    /// The media types of its success answer (one of them, chosen by the handler).
    var contentTypes = ["application/json"]
    /// The error statuses its handler answers besides those `statuses` adds from the route's shape.
    var errors: [Int] = []
    /// The largest body accepted.
    var bodyLimit = Route.smallBody
    /// Whether it needs the token (only the OpenAPI document does not).
    var needsToken = true
    /// Path parameters its success answer supplies, by name, with the JSON pointer to the value
    /// in its body: the document links this route to every route with that parameter (OpenAPI
    /// links), so a client or a tester can follow what one call made to the next.
    var supplies: [String: String] = [:]
    let handle: Handler

    /// The body limit of ordinary requests: 64 KiB (a message's text is at most 32 KiB).
    static let smallBody = 64 << 10
    /// The body limit of uploads: 8 MiB of files, base64 (4/3) plus JSON.
    static let uploadBody = 12 << 20
    /// What a file download is: one of the image types shown inline, or bytes to save
    /// (`API.content`).
    static let fileTypes = API.inlineTypes + ["application/octet-stream"]

    var segments: [Substring] { path.split(separator: "/") }

    /// The names of the path's `{name}` parameters, in order.
    var pathParameters: [String] { segments.filter { $0.hasPrefix("{") }.map { String($0.dropFirst().dropLast()) } }

    /// Every status it may answer: its success, its handler's `errors`, and what follows from its
    /// shape: 403 (Host, Origin) always; 401 with a token; 400 when anything in the request has a
    /// schema; 404 when the path names something; 413 and 415 with a body.
    var statuses: [Int] {
        var all = Set(errors + [success, 403])
        if needsToken { all.insert(401) }
        if !pathParameters.isEmpty || query.contains(where: { Self.constrains($0.schema) }) || requestBody != nil { all.insert(400) }
        if !pathParameters.isEmpty { all.insert(404) }
        if requestBody != nil { all.formUnion([413, 415]) }
        return all.sorted()
    }

    /// Whether a schema can refuse a parameter (more than "any string").
    static func constrains(_ schema: JSON) -> Bool {
        let keywords = Set((schema.objectValue ?? [:]).keys)
        return schema["type"]?.stringValue != "string" || !keywords.subtracting(["type", "description", "examples"]).isEmpty
    }

    /// The schemas of the path parameters, by name: every `{name}` in a route's path must have
    /// one (a test checks every route), and the server checks each value against it.
    static let pathSchemas: [String: JSON] = [
        "room": RequestSchema.roomName,
        "partition": RequestSchema.withExamples(
            RequestSchema.string(
                "a room or conversation: its partition id (as GET /api/rooms and /api/conversations list them) or a room's name (see room); a name over \(RoomName.maxBytes) UTF-8 bytes names nothing (404)",
                minLength: 1, maxLength: RoomName.maxBytes + 1, pattern: RequestSchema.roomName["pattern"]?.stringValue)),
        "conversation": RequestSchema.id("a conversation's id"),
        "message": RequestSchema.id("a message's id"),
        "task": RequestSchema.id("a task's id"),
        "user": RequestSchema.user("a person", inPath: true),
        "device": RequestSchema.user("one of your devices (its key, as GET /api/devices lists it)", inPath: true),
        "index": RequestSchema.integer("an attachment's place in its message, from 1", minimum: 1, maximum: BodyLimits.attachments),
    ]

    /// The path parameters, query parameters and body of `request` against their schemas: the
    /// body parsed (nil without a body schema), or a 400 that names the field and the rule.
    func validate(_ request: HTTPRequest, parameters: [String: String]) throws(WebError) -> RequestBody? {
        for name in pathParameters {
            let schema = Self.pathSchemas[name] ?? RequestSchema.string("")
            if let problem = SchemaCheck.parameterProblem(parameters[name] ?? "", schema, name: name) { throw .badRequest(problem) }
        }
        for parameter in query {
            guard let value = request.query[parameter.name] else { continue }
            if let problem = SchemaCheck.parameterProblem(value, parameter.schema, name: parameter.name) { throw .badRequest(problem) }
        }
        guard let schema = requestBody else { return nil }
        let body = try RequestBody(request)
        if let problem = SchemaCheck.problem(body.object, schema, at: "") { throw .badRequest(problem) }
        return body
    }

    /// The path parameters if `path` matches this route's pattern.
    func match(_ parts: [Substring]) -> [String: String]? {
        let pattern = segments
        guard pattern.count == parts.count else { return nil }
        var parameters: [String: String] = [:]
        for (expected, actual) in zip(pattern, parts) {
            if expected.hasPrefix("{") {
                guard !actual.isEmpty else { return nil }
                parameters[String(expected.dropFirst().dropLast())] = String(actual)
            } else if expected != actual {
                return nil
            }
        }
        return parameters
    }
}

/// A query parameter: its name, what it means, and its schema.
struct QueryParameter: Sendable {
    let name: String
    let description: String
    let schema: JSON
}

/// What a handler gets: the request, its path parameters, its body (checked against the route's
/// schema) and the node.
struct Call: Sendable {
    let request: HTTPRequest
    let parameters: [String: String]
    /// The parsed body, for a route that takes one (`Route.validate` made it).
    let parsedBody: RequestBody?
    let access: NodeAccess
    let web: WebInfo

    func parameter(_ name: String) -> String { parameters[name] ?? "" }

    /// The body, already checked against the route's schema.
    var body: RequestBody {
        get throws(WebError) {
            guard let parsedBody else { throw .badRequest("the request needs a JSON object body") }
            return parsedBody
        }
    }
}

/// Where the web server listens, for `status` and `me`.
struct WebInfo: Sendable {
    let url: String
}
