import Foundation
import Identity
import NodeRuntime
import Presentation
import Synchronization

/// The web UI and JSON API of one node (docs/DESIGN.md §6.3): the HTTP server, the gate every request
/// passes, the routes, the page's static files and the live events.
public final class WebServer: Sendable {
    /// Where it listens by default.
    public static let defaultAddress = "127.0.0.1:7749"

    private let server: HTTPServer
    private let access: NodeAccess
    private let host: String
    private let requestedPort: UInt16
    private let state = ServerState()

    /// `host` must be an IPv4 address; anything but loopback needs `allowRemote` (the caller
    /// warns). The token is the data directory's login secret (`web.secret`, `WebSecret`).
    public init(node: Node, identity: Identity, host: String, port: UInt16, allowRemote: Bool) throws(WebError) {
        guard Gate.isIPv4Literal(host) else { throw .badAddress("--web needs an IPv4 address and a port, such as 127.0.0.1:7749; '\(host)' is not one") }
        guard host.hasPrefix("127.") || allowRemote else {
            throw .badAddress("--web \(host) is not a loopback address: anyone on the network could reach the UI; add --web-allow-remote if you mean it")
        }
        access = NodeAccess(node: node, identity: identity)
        self.host = host
        self.requestedPort = port
        let state = self.state
        let access = self.access
        server = HTTPServer(admit: { request in Router.admit(request, state: state) }) { request in
            await Router.handle(request, state: state, access: access)
        }
    }

    /// Starts serving; returns the URL to open (it carries the token: print it, never log it).
    public func start() throws(WebError) -> String {
        let secret = WebSecret(dataDirectory: access.node.configuration.dataDirectory)
        let token = try secret.current()
        try server.start(host: host, port: requestedPort)
        let gate = Gate(secret: secret, boundHost: host, port: server.port)
        let shownHost = host == "0.0.0.0" ? "127.0.0.1" : host
        let base = "http://\(shownHost):\(server.port)/"
        state.set(gate: gate, info: WebInfo(url: base), assets: Assets.load())
        access.startWatching()
        return base + "?token=" + token
    }

    /// The port it listens on (after `start`).
    public var port: UInt16 { server.port }

    /// Closes the event streams and stops the server.
    public func stop() async {
        access.stopWatching()
        await server.stop()
    }
}

/// What the router needs once the server is listening (the port decides the gate).
final class ServerState: Sendable {
    private let values = Mutex<(Gate, WebInfo, Assets)?>(nil)

    func set(gate: Gate, info: WebInfo, assets: Assets) { values.withLock { $0 = (gate, info, assets) } }
    var current: (gate: Gate, info: WebInfo, assets: Assets)? { values.withLock { $0 } }
}

/// Decides what answers a request: the gate first, then the page's files or an API route.
enum Router {
    static func bodyLimit(method: String, path: String) -> Int {
        let parts = path.split(separator: "/")
        return Route.all.first { $0.method == method && $0.match(parts) != nil }?.bodyLimit ?? Route.smallBody
    }

    /// Decides on a request from its headers, before any of its body is read: the gate (Host,
    /// Origin, the token), the route and method, the body's type and declared size. Whatever
    /// it refuses costs the server no more than the headers.
    static func admit(_ request: HTTPRequest, state: ServerState) -> HTTPServer.Admission {
        guard let (gate, _, _) = state.current else { return .refuse(WebError.unavailable("starting").response) }
        return admit(request, gate: gate)
    }

    /// `admit` with a known gate (pure: the fuzz target `web` calls it).
    static func admit(_ request: HTTPRequest, gate: Gate) -> HTTPServer.Admission {
        do {
            let limit: Int
            switch try resolve(request, gate: gate) {
            case .page:
                guard request.method == "GET" || request.method == "HEAD" else { throw WebError.methodNotAllowed(allowed: ["GET"]) }
                limit = 0
            case .route(let route, _):
                limit = route.bodyLimit
                // A body another site's page could send without a CORS preflight (a form,
                // text/plain) is refused by type, whatever it carries.
                if hasBody(request) {
                    let type = request.header("content-type") ?? ""
                    guard isJSON(type) else { throw WebError.unsupportedMediaType(type) }
                }
            }
            if let length = request.header("content-length"), let declared = Int(length), declared > limit {
                throw WebError.tooLarge(limit: limit)
            }
            return .accept(bodyLimit: limit, trusted: gate.isAuthorized(request))
        } catch {
            return .refuse(API.webError(error).response)
        }
    }

    /// Whether the request announces a body (a length above 0, or a chunked one).
    static func hasBody(_ request: HTTPRequest) -> Bool {
        if request.header("transfer-encoding") != nil { return true }
        return (request.header("content-length").flatMap { Int($0) } ?? 0) > 0
    }

    /// `application/json`, with parameters (`; charset=utf-8`) or without, in any case.
    static func isJSON(_ contentType: String) -> Bool {
        let media = contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        return media.trimmingCharacters(in: .whitespaces).lowercased() == "application/json"
    }

    static func handle(_ request: HTTPRequest, state: ServerState, access: NodeAccess) async -> HTTPReply {
        guard let (gate, info, assets) = state.current else { return .response(WebError.unavailable("starting").response) }
        do {
            switch try resolve(request, gate: gate) {
            case .page:
                return try page(request, gate: gate, assets: assets)
            case .route(let route, let parameters):
                let body = try route.validate(request, parameters: parameters)
                return try await route.handle(Call(request: request, parameters: parameters, parsedBody: body, access: access, web: info))
            }
        } catch {
            return .response(API.webError(error).response)
        }
    }

    /// What a request that passed the gate asks for.
    enum Resolution {
        /// The page or one of its files.
        case page
        /// An API route, with its path parameters.
        case route(Route, [String: String])
    }

    /// The gate and the routing of a request, without the node (pure: the fuzz target `web`
    /// calls it with any method, path, headers and body).
    static func resolve(_ request: HTTPRequest, gate: Gate) throws(WebError) -> Resolution {
        try gate.checkSite(request)
        if !request.path.hasPrefix("/api/") { return .page }
        let parts = request.path.split(separator: "/")
        let matching = Route.all.compactMap { route in route.match(parts).map { (route, $0) } }
        let needsToken = matching.first?.0.needsToken ?? true
        if needsToken && !gate.isAuthorized(request) { throw .unauthorized }
        guard !matching.isEmpty else { throw .notFound("no such endpoint: \(request.method) \(request.path.prefix(200)); see /api/openapi.json") }
        guard let (route, parameters) = matching.first(where: { $0.0.method == request.method }) else {
            throw .methodNotAllowed(allowed: matching.map(\.0.method))
        }
        return .route(route, parameters)
    }

    /// The page: `/` (after `?token=` sets the cookie and redirects to drop it from the
    /// address bar) and its files.
    static func page(_ request: HTTPRequest, gate: Gate, assets: Assets) throws -> HTTPReply {
        guard request.method == "GET" || request.method == "HEAD" else { throw WebError.methodNotAllowed(allowed: ["GET"]) }
        if request.path == "/", let token = request.query["token"] {
            guard gate.matches(token) else { throw WebError.unauthorized }
            return .response(HTTPResponse(status: 303, headers: [("Location", "/"), ("Set-Cookie", gate.cookie)]))
        }
        let name = request.path == "/" ? "index.html" : String(request.path.dropFirst())
        guard let file = assets.files[name] else { throw WebError.notFound("no such page: \(request.path.prefix(200))") }
        return .response(HTTPResponse(status: 200, headers: [("Content-Type", file.mime)], body: file.bytes))
    }
}

/// The page's static files (`Sources/WebUI/Assets`, shipped as the package's resources beside
/// the executable), read once at start.
struct Assets: Sendable {
    struct File: Sendable {
        let mime: String
        let bytes: [UInt8]
    }
    let files: [String: File]

    static let types = ["html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8", "svg": "image/svg+xml"]

    /// Looks for the resource bundle beside the executable (and SwiftPM's build directory), never
    /// through `Bundle.module`, which stops the process when the bundle is missing. Without it
    /// the page says what is wrong and the API still works.
    static func load() -> Assets {
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").resolvingSymlinksInPath().deletingLastPathComponent()
        let candidates = [executable, Bundle.main.bundleURL, Bundle.main.resourceURL].compactMap { $0 }.flatMap { base in
            ["Parley_WebUI.resources/Assets", "Parley_WebUI.bundle/Assets", "Parley_WebUI.resources"].map { base.appendingPathComponent($0) }
        }
        var files: [String: File] = [:]
        for directory in candidates where FileManager.default.fileExists(atPath: directory.appendingPathComponent("index.html").path) {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] {
                guard let mime = types[URL(fileURLWithPath: name).pathExtension],
                    let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path)
                else { continue }
                files[name] = File(mime: mime, bytes: Array(data))
            }
            break
        }
        if files["index.html"] == nil {
            let text =
                "<!doctype html><title>Parley</title><p>The web UI's files (Parley_WebUI.resources) are missing beside the parley executable; reinstall Parley. The API works: /api/openapi.json."
            files["index.html"] = File(mime: types["html"]!, bytes: Array(text.utf8))
        }
        return Assets(files: files)
    }
}
