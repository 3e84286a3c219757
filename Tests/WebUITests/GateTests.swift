import Foundation
import Testing

/// Who may talk to the server, and what it refuses before reading anything: the token, Host and
/// Origin, body limits, malformed requests, unknown routes.
@Suite struct GateTests {
    /// Every documented operation with its path parameters filled in.
    static func documentedRequests(_ api: APIClient) -> [(method: String, path: String, template: String)] {
        let paths = api.checker.document["paths"] as? [String: [String: Any]] ?? [:]
        return paths.flatMap { template, methods in
            methods.keys.map { method in
                let path = template.replacingOccurrences(of: #"\{[a-z]+\}"#, with: String(repeating: "a", count: 52), options: .regularExpression)
                return (method.uppercased(), path, template)
            }
        }.sorted { $0.path + $0.method < $1.path + $1.method }
    }

    @Test func everyAPIRoute_withoutOrWithAWrongToken_is401() async throws {
        let (directory, node) = try await APITests.startNode("token")
        defer {
            node.kill()
            directory.remove()
        }
        let api = try APIClient(node: node)
        let client = node.client
        for request in Self.documentedRequests(api) where request.template != "/api/openapi.json" {
            for headers in [[:], ["Authorization": "Bearer " + String(repeating: "0", count: 64)], ["Cookie": "parley_token_\(node.port)=nope"]] {
                let response = try client.send(request.method, request.path, headers: headers)
                #expect(response.status == 401, "\(request.method) \(request.path) with \(headers): \(response)")
                #expect(response.errorMessage?.contains("token") == true, "\(response)")
                for problem in api.checker.check(response, request.method, request.template) { Issue.record(Comment(rawValue: problem)) }
            }
        }
        // Unknown API paths say 401 too: without the token nobody learns which routes exist.
        #expect(try client.send("GET", "/api/secret").status == 401)
        #expect(try client.send("GET", "/api/openapi.json").status == 200)
    }

    @Test func theStartURL_setsAnHttpOnlyStrictCookie_thatOpensTheAPI() async throws {
        let (directory, node) = try await APITests.startNode("cookie")
        defer {
            node.kill()
            directory.remove()
        }
        let client = node.client
        let redirect = try client.send("GET", "/?token=\(node.token)")
        #expect(redirect.status == 303 && redirect.headers["location"] == "/")
        let cookie = try #require(redirect.headers["set-cookie"])
        #expect(cookie.hasPrefix("parley_token_\(node.port)=\(node.token);"))
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
        let pair = String(cookie.split(separator: ";")[0])
        #expect(try client.send("GET", "/api/me", headers: ["Cookie": "theme=dark; \(pair)"]).status == 200)
        #expect(try client.send("GET", "/?token=wrong").status == 401)
        // The token is printed once, in the start line, and never in the log.
        let log = node.process?.stderr ?? ""
        #expect(!log.contains(node.token))
    }

    @Test func foreignHostOrOrigin_isRefused_beforeTheToken() async throws {
        let (directory, node) = try await APITests.startNode("site")
        defer {
            node.kill()
            directory.remove()
        }
        let client = node.client
        let port = node.port
        let refused: [[String: String]] = [
            ["Host": "evil.example:\(port)"],  // DNS rebinding: a foreign name resolved to 127.0.0.1
            ["Host": "evil.example"],
            ["Host": "127.0.0.1:\(port &+ 1)"],
            ["Host": "127.0.0.1:\(port)", "Origin": "http://evil.example"],
            ["Host": "127.0.0.1:\(port)", "Origin": "null"],
            ["Host": "127.0.0.1:\(port)", "Origin": "http://localhost:\(port)"],
            ["Host": "127.0.0.1:\(port)", "Sec-Fetch-Site": "cross-site"],
        ]
        for headers in refused {
            for (method, path) in [("GET", "/api/me"), ("POST", "/api/rooms"), ("GET", "/")] {
                let response = try client.send(
                    method, path, headers: headers.merging(node.bearer) { a, _ in a }, body: method == "POST" ? Array(#"{"name":"x"}"#.utf8) : [])
                #expect(response.status == 403, "\(method) \(path) with \(headers): \(response)")
                #expect(response.errorMessage != nil)
            }
        }
        // No Host header at all (HTTP/1.0 allows it; this server does not).
        let bare = try client.send("", "", rawHead: "GET /api/me HTTP/1.0\r\nAuthorization: Bearer \(node.token)\r\n\r\n")
        #expect(bare.status == 403 || bare.status == 400, "\(bare)")
        // Its own names are fine.
        for headers in [["Host": "localhost:\(port)"], ["Host": "127.0.0.1:\(port)", "Origin": "http://127.0.0.1:\(port)"]] {
            #expect(try client.send("GET", "/api/me", headers: headers.merging(node.bearer) { a, _ in a }).status == 200, "\(headers)")
        }
    }

    @Test func oversizedBodies_are413_andMalformedJSON_is400WithAMessage() async throws {
        let (directory, node) = try await APITests.startNode("limits")
        defer {
            node.kill()
            directory.remove()
        }
        let client = node.client
        var headers = node.bearer
        headers["Content-Type"] = "application/json"
        let big = Array(#"{"name":""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: 70_000) + Array(#""}"#.utf8)
        // Declared too large: refused from the headers.
        let declared = try client.send("POST", "/api/rooms", headers: headers, body: big)
        #expect(declared.status == 413 && declared.errorMessage?.contains("64.0 KiB") == true, "\(declared)")
        // Chunked, so the size is only known while reading.
        var chunked = headers
        chunked["Transfer-Encoding"] = "chunked"
        let body = Array(String(big.count, radix: 16).utf8) + [13, 10] + big + [13, 10] + Array("0\r\n\r\n".utf8)
        let streamed = try client.send("POST", "/api/rooms", headers: chunked, body: body)
        #expect(streamed.status == 413, "\(streamed)")
        // An upload route takes 12 MiB, not more.
        var lying = headers
        lying["Content-Length"] = String(13 << 20)
        let upload = try client.send("POST", "/api/partitions/lobby/messages", headers: lying, body: Array(#"{"text":"x"}"#.utf8))
        #expect(upload.status == 413, "\(upload)")
        // Every route with a body documents 413 and answers it for a body over its limit.
        let api = try APIClient(node: node)
        var bodies = 0
        for request in Self.documentedRequests(api) where api.checker.operation(request.method, request.template)?["requestBody"] != nil {
            bodies += 1
            let response = try client.send(request.method, request.path, headers: lying, body: Array(#"{"text":"x"}"#.utf8))
            #expect(response.status == 413, "\(request.method) \(request.path): \(response)")
            for problem in api.checker.check(response, request.method, request.template) { Issue.record(Comment(rawValue: problem)) }
        }
        #expect(bodies >= 10, "only \(bodies) documented routes with a body")

        for (text, fragment) in [
            ("{", "not valid JSON"), ("[1, 2]", "JSON object"), ("\"lobby\"", "JSON object"), ("", "JSON object body"),
            (#"{"name": 7}"#, "name must be a string"), (#"{"name": null}"#, "name must be a string"), (#"{"title": "x"}"#, "name is missing"),
        ] {
            let response = try client.send("POST", "/api/rooms", headers: headers, body: Array(text.utf8))
            #expect(response.status == 400, "\(text): \(response)")
            #expect(response.errorMessage?.contains(fragment) == true, "\(text): \(response)")
        }
        // Still serving after all that.
        #expect(try client.send("GET", "/api/me", headers: node.bearer).status == 200)
    }

    @Test func unknownRoutes_are404_wrongMethods_are405_andEveryServedRouteIsDocumented() async throws {
        let (directory, node) = try await APITests.startNode("routes")
        defer {
            node.kill()
            directory.remove()
        }
        let api = try APIClient(node: node)
        let client = node.client
        for path in ["/api/", "/api/nothing", "/api/rooms/lobby/extra", "/api/messages", "/nothing.html", "/../etc/passwd"] {
            let response = try client.send("GET", path, headers: node.bearer)
            #expect(response.status == 404, "\(path): \(response)")
            #expect(response.errorMessage != nil)
        }
        // Every documented path answers the methods it does not document with 405 and lists the
        // documented ones: the router serves exactly what the document says.
        let paths = api.checker.document["paths"] as? [String: [String: Any]] ?? [:]
        for (template, methods) in paths {
            let documented = Set(methods.keys.map { $0.uppercased() })
            let path = template.replacingOccurrences(of: #"\{[a-z]+\}"#, with: String(repeating: "a", count: 52), options: .regularExpression)
            for method in Set(["GET", "POST", "PUT", "PATCH", "DELETE"]).subtracting(documented) {
                let response = try client.send(method, path, headers: node.bearer)
                #expect(response.status == 405, "\(method) \(path): \(response)")
                let allowed = Set((response.headers["allow"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
                #expect(allowed == documented, "\(method) \(path): Allow \(allowed) but documented \(documented)")
            }
        }
    }

    @Test func thePage_isServed_withSecurityHeaders_andNeedsNoToken() async throws {
        let (directory, node) = try await APITests.startNode("page")
        defer {
            node.kill()
            directory.remove()
        }
        let client = node.client
        for (path, type) in [("/", "text/html"), ("/app.js", "text/javascript"), ("/app.css", "text/css")] {
            let response = try client.send("GET", path)
            #expect(response.status == 200 && response.headers["content-type"]?.hasPrefix(type) == true, "\(path): \(response)")
            #expect(response.headers["content-security-policy"]?.contains("script-src 'self'") == true)
            #expect(response.headers["x-frame-options"] == "DENY")
        }
        #expect(try client.send("POST", "/").status == 405)
        // The script never writes peer text as HTML.
        let script = try client.send("GET", "/app.js").text
        #expect(!script.contains("innerHTML") && !script.contains("insertAdjacentHTML") && !script.contains("document.write"))
    }

    @Test func aKeepAliveConnection_carriesAtMost1000Requests_andOnlyOneWithoutTheToken() async throws {
        let (directory, node) = try await APITests.startNode("keep-alive")
        defer {
            node.kill()
            directory.remove()
        }
        let result = try node.client.keepAlive("/app.css", headers: node.bearer, max: 1_100)
        #expect(result.answered == 1_000 && result.lastSaidClose, "\(result)")
        // Without the token a connection lives for one request (and at most the header deadline).
        let untrusted = try node.client.keepAlive("/app.css", max: 10)
        #expect(untrusted.answered == 1 && untrusted.lastSaidClose, "\(untrusted)")
    }

    @Test func garbage_doesNotStopTheServer() async throws {
        let (directory, node) = try await APITests.startNode("garbage")
        defer {
            node.kill()
            directory.remove()
        }
        var client = node.client
        client.readTimeoutSeconds = 2  // some of these leave the server waiting for the rest
        for head in [
            "NONSENSE\r\n\r\n", "GET\r\n\r\n", "GET / HTTP/9.9\r\nHost: 127.0.0.1:\(node.port)\r\n\r\n",
            "GET /api/me HTTP/1.1\r\nHost: 127.0.0.1:\(node.port)\r\nX-Big: \(String(repeating: "x", count: 200_000))\r\n\r\n",
            "\u{0}\u{1}\u{2}\r\n\r\n",
        ] {
            _ = try? client.send("", "", rawHead: head)
        }
        #expect(try client.send("GET", "/api/me", headers: node.bearer).status == 200)
        #expect(node.process?.isRunning == true)
    }
}
