import Foundation

@testable import WebUI

let fuzzGate = Gate(token: String(repeating: "ab", count: 32), boundHost: "127.0.0.1", port: 7749)

/// `web`: a request as the HTTP server hands it over, without the node: the gate, the router,
/// the page, body limits and the JSON body reader. The input is `flags` then lines: method,
/// path, `name: value` headers, an empty line, the body; flag bits add a good Host header and
/// the token so the fuzzer reaches the routes.
func fuzzWebRequest(_ bytes: [UInt8]) {
    var input = FuzzInput(bytes)
    let flags = input.byte()
    let text = String(decoding: input.rest(), as: UTF8.self)
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false).makeIterator()
    let method = String(lines.next() ?? "GET")
    let path = String(lines.next() ?? "/")
    var headers: [String: String] = [:]
    while let line = lines.next(), !line.isEmpty {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[line[..<colon].lowercased()] = String(line[line.index(after: colon)...].drop { $0 == " " })
    }
    var body: [UInt8] = []
    while let line = lines.next() { body += Array(line.utf8) + [10] }
    if flags & 1 != 0 { headers["host"] = "127.0.0.1:7749" }
    if flags & 2 != 0 { headers["authorization"] = "Bearer " + fuzzGate.token }
    var query: [String: String] = [:]
    if flags & 4 != 0 { query["token"] = fuzzGate.token }
    let request = HTTPRequest(method: method, path: path, query: query, headers: headers, body: body)

    _ = request.cookie(fuzzGate.cookieName)
    let limit = Router.bodyLimit(method: method, path: path)
    check(limit == Route.smallBody || limit == Route.uploadBody, "an unknown body limit \(limit)")
    if case .accept(let bodyLimit, let trusted) = Router.admit(request, gate: fuzzGate) {
        check(bodyLimit == 0 || bodyLimit == limit, "admitted with a body limit \(bodyLimit), not the route's \(limit)")
        check(!trusted || fuzzGate.isAuthorized(request), "trusted without the token")
    }
    do {
        switch try Router.resolve(request, gate: fuzzGate) {
        case .page:
            _ = try? Router.page(request, gate: fuzzGate, assets: Assets(files: [:]))
        case .route(let route, let parameters):
            check(route.method == method, "a route of another method matched")
            check(fuzzGate.isAuthorized(request) || !route.needsToken, "a route that needs the token matched without it")
            check(parameters.values.allSatisfy { !$0.isEmpty }, "an empty path parameter matched")
        }
    } catch {
        _ = API.webError(error).response
    }
    guard let fields = try? RequestBody(request) else { return }
    for key in fields.object.keys.prefix(16) {
        _ = try? fields.string(key)
        _ = try? fields.bool(key)
        _ = try? fields.number(key)
        _ = try? fields.strings(key)
        _ = try? fields.objects(key)
        _ = try? fields.object(key)
        _ = fields.isNull(key)
    }
}
