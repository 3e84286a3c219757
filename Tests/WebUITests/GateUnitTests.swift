import Testing

@testable import WebUI

/// The gate and the route table, in process: the rules every request meets first.
@Suite struct GateUnitTests {
    static let gate = Gate(token: String(repeating: "ab", count: 32), boundHost: "127.0.0.1", port: 7749)

    @Test(arguments: [
        ("127.0.0.1:7749", true), ("localhost:7749", true), ("LOCALHOST:7749", true), ("127.0.0.1:7750", false),
        ("127.0.0.1", false), ("evil.example:7749", false), ("127.0.0.1.nip.io:7749", false), ("[::1]:7749", false),
        ("", false), ("10.0.0.5:7749", false),
    ])
    func host_isAcceptedOnlyWhenItNamesThisServer(header: String, accepted: Bool) {
        #expect(Self.gate.isOwnHost(header) == accepted, "\(header)")
    }

    @Test func boundToEveryAddress_anIPv4LiteralWithThePortIsItsHost() {
        let gate = Gate(token: "t", boundHost: "0.0.0.0", port: 80)
        #expect(gate.isOwnHost("192.168.1.20:80") && gate.isOwnHost("localhost:80"))
        #expect(!gate.isOwnHost("evil.example:80") && !gate.isOwnHost("192.168.1.20:81") && !gate.isOwnHost("1.2.3.999:80"))
    }

    @Test func origin_mustBeThisServer_whenPresent() {
        func request(_ headers: [String: String]) -> HTTPRequest { HTTPRequest(method: "GET", path: "/api/me", headers: headers) }
        #expect(throws: Never.self) { try Self.gate.checkSite(request(["host": "127.0.0.1:7749"])) }
        #expect(throws: Never.self) { try Self.gate.checkSite(request(["host": "127.0.0.1:7749", "origin": "http://127.0.0.1:7749"])) }
        for origin in ["http://evil.example", "null", "https://127.0.0.1:7749", "http://127.0.0.1:7749.evil.example"] {
            #expect(throws: WebError.self, "\(origin)") { try Self.gate.checkSite(request(["host": "127.0.0.1:7749", "origin": origin])) }
        }
        #expect(throws: WebError.self) { try Self.gate.checkSite(request([:])) }
    }

    @Test func token_fromCookieOrBearer_exactlyMatched() {
        let token = Self.gate.token
        func request(_ headers: [String: String]) -> HTTPRequest { HTTPRequest(method: "GET", path: "/api/me", headers: headers) }
        #expect(Self.gate.isAuthorized(request(["cookie": "a=b; parley_token_7749=\(token)"])))
        #expect(Self.gate.isAuthorized(request(["authorization": "Bearer \(token)"])))
        #expect(!Self.gate.isAuthorized(request(["cookie": "parley_token_7750=\(token)"])))
        #expect(!Self.gate.isAuthorized(request(["authorization": "Bearer \(token.dropLast())"])))
        #expect(!Self.gate.isAuthorized(request(["authorization": "Basic \(token)"])))
        #expect(!Self.gate.isAuthorized(request([:])))
        #expect(Self.gate.cookie == "parley_token_7749=\(token); Path=/; Max-Age=34560000; HttpOnly; SameSite=Strict")
        #expect(!Gate(token: "", boundHost: "127.0.0.1", port: 7749).matches(""), "an unreadable secret matches nothing")
    }

    @Test func routes_areUniqueByMethodAndPattern_andUploadsAloneTakeLargeBodies() {
        var seen: Set<String> = []
        for route in Route.all {
            let shape = route.method + " " + route.segments.map { $0.hasPrefix("{") ? "{}" : String($0) }.joined(separator: "/")
            #expect(seen.insert(shape).inserted, "two routes for \(shape)")
            #expect(route.path.hasPrefix("/api/"))
            if route.bodyLimit > Route.smallBody { #expect(["POST", "PUT"].contains(route.method), "\(route.path)") }
        }
        #expect(Router.bodyLimit(method: "POST", path: "/api/partitions/lobby/messages") == Route.uploadBody)
        #expect(Router.bodyLimit(method: "POST", path: "/api/rooms") == Route.smallBody)
        #expect(Router.bodyLimit(method: "POST", path: "/nowhere") == Route.smallBody)
    }

    @Test func routeMatching_bindsParameters_andRejectsOtherShapes() throws {
        let route = try #require(Route.all.first { $0.path == "/api/messages/{message}/attachments/{index}" })
        #expect(route.match("/api/messages/abc/attachments/2".split(separator: "/")) == ["message": "abc", "index": "2"])
        #expect(route.match("/api/messages/abc/attachments".split(separator: "/")) == nil)
        #expect(route.match("/api/tasks/abc/attachments/2".split(separator: "/")) == nil)
    }
}
