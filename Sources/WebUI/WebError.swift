import Presentation

/// Everything the web server refuses or fails at, with the HTTP status it answers and a message
/// for people (the API's errors are `{"error": "..."}`).
public enum WebError: Error, Equatable, Sendable {
    /// A malformed request: bad JSON, a missing or wrong field, an invalid id (400).
    case badRequest(String)
    /// No token, or a wrong one (401).
    case unauthorized
    /// A foreign `Host` or `Origin`: DNS rebinding or a cross-site request (403).
    case forbidden(String)
    /// No such route, or no such thing (404).
    case notFound(String)
    /// The route exists, not with this method (405).
    case methodNotAllowed(allowed: [String])
    /// Well-formed, but refused by the state of things: not a member, not your message (409).
    case conflict(String)
    /// The body is over the limit for this route (413).
    case tooLarge(limit: Int)
    /// A field is over its limit in UTF-8 bytes, which its schema's `maxLength` (characters)
    /// cannot say (413); the text names the field and the limit.
    case fieldTooLong(String)
    /// Well-formed and as the schema says, but not what it must be: a user id in a body that is
    /// not a public key, an archive that is not one (422).
    case unprocessable(String)
    /// An API write whose body is not `application/json` (415): a form or a `text/plain` body is
    /// what another site's page can send without asking the browser first.
    case unsupportedMediaType(String)
    /// More request headers than the server reads (431).
    case tooManyHeaders(limit: Int)
    /// The request's headers did not arrive within the deadline (408).
    case headersTooSlow(seconds: Int)
    /// The node did not answer in time or is stopping (503).
    case unavailable(String)
    /// A failure of this node (500); the message says what failed, never a secret.
    case internalError(String)
    /// The address given for `--web` is not one this server can bind.
    case badAddress(String)
    /// The server could not listen.
    case cannotListen(String)

    public var status: Int {
        switch self {
        case .badRequest, .badAddress: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .notFound: 404
        case .methodNotAllowed: 405
        case .conflict: 409
        case .headersTooSlow: 408
        case .tooLarge, .fieldTooLong: 413
        case .unprocessable: 422
        case .unsupportedMediaType: 415
        case .tooManyHeaders: 431
        case .unavailable: 503
        case .internalError, .cannotListen: 500
        }
    }

    public var message: String {
        switch self {
        case .badRequest(let text), .forbidden(let text), .notFound(let text), .conflict(let text), .unavailable(let text),
            .internalError(let text), .badAddress(let text), .cannotListen(let text), .fieldTooLong(let text), .unprocessable(let text):
            text
        case .unauthorized:
            "missing or wrong access token: open the URL `parley run` printed (it sets a cookie), or send Authorization: Bearer TOKEN"
        case .methodNotAllowed(let allowed): "method not allowed here; use \(allowed.joined(separator: " or "))"
        case .tooLarge(let limit): "the request body is over the limit of \(Format.byteCount(UInt64(limit))) for this request"
        case .unsupportedMediaType(let given):
            "the API takes only JSON bodies (Content-Type: application/json), not '\(given.prefix(100))'"
        case .tooManyHeaders(let limit): "the request has more than \(limit) headers; send fewer"
        case .headersTooSlow(let seconds): "the request's headers took longer than \(seconds) s; send them at once"
        }
    }

    /// The JSON error response.
    public var response: HTTPResponse {
        var response = HTTPResponse.json(JSON.object(["error": .string(message)]).text, status: status)
        if case .methodNotAllowed(let allowed) = self { response.headers.append(("Allow", allowed.joined(separator: ", "))) }
        if case .unauthorized = self { response.headers.append(("WWW-Authenticate", "Bearer")) }
        return response
    }
}
