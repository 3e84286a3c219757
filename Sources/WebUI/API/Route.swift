import Presentation

/// One endpoint of the JSON API: how it is matched, what it does, and what the OpenAPI document
/// says about it. The document is made from this table, and the router serves exactly this
/// table, so the two cannot drift apart.
struct Route: Sendable {
    typealias Handler = @Sendable (Call) async throws -> HTTPReply

    let method: String
    /// `/api/partitions/{partition}/messages`: literal segments and `{name}` parameters.
    let path: String
    let summary: String
    /// Query parameters: name, description.
    var query: [(String, String)] = []
    /// The request body's schema (a JSON object), if it takes one.
    var requestBody: JSON? = nil
    /// The success status and its schema (nil: no body, or not JSON when `contentType` is set).
    let success: Int
    var response: JSON? = nil
    var contentType = "application/json"
    /// The error statuses it may answer besides 401 and 403 (every API route has those).
    var errors: [Int] = []
    /// The largest body accepted.
    var bodyLimit = Route.smallBody
    /// Whether it needs the token (only the OpenAPI document does not).
    var needsToken = true
    let handle: Handler

    /// The body limit of ordinary requests: 64 KiB (a message's text is at most 32 KiB).
    static let smallBody = 64 << 10
    /// The body limit of uploads: 8 MiB of files, base64 (4/3) plus JSON.
    static let uploadBody = 12 << 20

    var segments: [Substring] { path.split(separator: "/") }

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

/// What a handler gets: the request, its path parameters and the node.
struct Call: Sendable {
    let request: HTTPRequest
    let parameters: [String: String]
    let access: NodeAccess
    let web: WebInfo

    func parameter(_ name: String) -> String { parameters[name] ?? "" }
}

/// Where the web server listens, for `status` and `me`.
struct WebInfo: Sendable {
    let url: String
}
