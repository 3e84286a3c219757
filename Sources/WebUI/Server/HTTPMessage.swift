/// One HTTP request as the server hands it to its handler: everything read and size-checked,
/// nothing yet trusted (the `Gate` checks `Host`, `Origin` and the token first).
public struct HTTPRequest: Sendable {
    public var method: String
    /// The path without the query string, percent-decoded by the server library.
    public var path: String
    /// Query arguments (the last value wins when a name repeats).
    public var query: [String: String]
    /// Request headers, names lowercased.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// The value of a header (`name` in any case).
    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The value of a cookie from the `Cookie` header.
    public func cookie(_ name: String) -> String? {
        guard let line = header("cookie") else { return nil }
        for part in line.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0].trimmingCharacters(in: " ") == name { return String(pair[1]).trimmingCharacters(in: " ") }
        }
        return nil
    }
}

/// A complete response.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON document (`application/json; charset=utf-8`).
    public static func json(_ text: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json; charset=utf-8")], body: Array(text.utf8))
    }
}

/// What a handler answers: a response, or a live event stream that stays open.
public enum HTTPReply: Sendable {
    case response(HTTPResponse)
    case stream(EventStream)
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        var text = Substring(self)
        while text.first == set { text.removeFirst() }
        while text.last == set { text.removeLast() }
        return String(text)
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> String { String(self).trimmingCharacters(in: set) }
}
