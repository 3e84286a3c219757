import Sodium

/// Who may talk to the web server: the checks every request passes before anything in it is
/// used.
///
/// - `Host` MUST name this server (`BOUND:PORT`, `localhost:PORT`, `127.0.0.1:PORT`; any IPv4
///   literal with the right port when bound to 0.0.0.0): a page on a DNS name that was rebound
///   to 127.0.0.1 sends its own name and is refused.
/// - `Origin`, when present, MUST be `http://` plus that host: other sites' pages are refused,
///   whatever their requests carry.
/// - The API needs the token, from the cookie the start URL sets or `Authorization: Bearer`,
///   compared in constant time. The page's static files carry no data and need none. The token
///   is the data directory's login secret (`WebSecret`): it outlives the node's restarts.
struct Gate: Sendable {
    private let currentToken: @Sendable () -> String
    let boundHost: String
    let port: UInt16

    /// A gate whose token is the login secret in its file, read again when the file changes.
    init(secret: WebSecret, boundHost: String, port: UInt16) {
        currentToken = { (try? secret.current()) ?? "" }
        self.boundHost = boundHost
        self.port = port
    }

    /// A gate with a fixed token (tests).
    init(token: String, boundHost: String, port: UInt16) {
        currentToken = { token }
        self.boundHost = boundHost
        self.port = port
    }

    /// The secret: 32 random bytes, hex; empty when it cannot be read (then nothing matches).
    var token: String { currentToken() }

    /// The cookie's name carries the port: cookies ignore ports, and two nodes on one machine
    /// must not overwrite each other's.
    var cookieName: String { "parley_token_\(port)" }

    /// The `Set-Cookie` value that keeps the token in the browser for 400 days (browsers' most),
    /// through restarts of the node and of the browser; never readable by scripts, never sent by
    /// other sites' requests.
    var cookie: String { "\(cookieName)=\(token); Path=/; Max-Age=34560000; HttpOnly; SameSite=Strict" }

    /// Refuses a request whose `Host` or `Origin` is not this server.
    func checkSite(_ request: HTTPRequest) throws(WebError) {
        guard let host = request.header("host"), isOwnHost(host) else {
            throw .forbidden("this server answers only to its own address (Host \(boundHost):\(port) or localhost:\(port))")
        }
        if let origin = request.header("origin") {
            guard origin.lowercased() == "http://" + host.lowercased() else {
                throw .forbidden("cross-site requests are refused (Origin \(origin) is not this server)")
            }
        }
        if let site = request.header("sec-fetch-site"), site == "cross-site" {
            throw .forbidden("cross-site requests are refused")
        }
    }

    func isOwnHost(_ header: String) -> Bool {
        let host = header.lowercased()
        guard let colon = host.lastIndex(of: ":"), host[host.index(after: colon)...] == String(port) else { return false }
        let name = String(host[..<colon])
        if name == "localhost" || name == boundHost || (boundHost.hasPrefix("127.") && name == "127.0.0.1") { return true }
        if boundHost == "0.0.0.0" { return Self.isIPv4Literal(name) }
        return false
    }

    /// Whether the request carries the token (cookie or bearer).
    func isAuthorized(_ request: HTTPRequest) -> Bool {
        if let cookie = request.cookie(cookieName), matches(cookie) { return true }
        if let header = request.header("authorization"), header.hasPrefix("Bearer ") { return matches(String(header.dropFirst(7))) }
        return false
    }

    func matches(_ candidate: String) -> Bool {
        let given = Array(candidate.utf8), expected = Array(token.utf8)
        return !expected.isEmpty && given.count == expected.count && Sodium.constantTimeEqual(given, expected)
    }

    static func isIPv4Literal(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in part.count <= 3 && UInt8(part) != nil }
    }
}
