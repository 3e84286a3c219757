import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What the server decides from a request's headers alone (issue 39): every header is read or
/// the request refused, security headers come once, a refusal comes before the body is read,
/// and API writes take only JSON.
@Suite struct HeaderGateTests {
    typealias Answer = (status: Int?, closed: Bool)

    /// Sends `head` (no body) from `source` and reads the answer: its status, and whether the
    /// server then closed the connection, within `timeout`.
    static func answer(to head: String, port: UInt16, from source: String = "127.0.0.5", timeout: Duration = .seconds(3)) -> Answer {
        guard let socket = RawSocket.connect(port: port, from: source) else { return (nil, false) }
        defer { close(socket) }
        RawSocket.send(socket, Array(head.utf8))
        var text: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        var closed = false
        while !closed && ContinuousClock.now < deadline {
            var entry = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            _ = poll(&entry, 1, 50)
            let read = RawSocket.drain(socket)
            text += read.bytes
            closed = !read.open
        }
        let statusLine = String(decoding: text.prefix(40), as: UTF8.self).split(separator: " ")
        return (statusLine.count >= 2 ? Int(statusLine[1]) : nil, closed)
    }

    @Test func twoHostOriginOrAuthorizationHeaders_are400_inEitherOrder() async throws {
        let (directory, node) = try await APITests.startNode("twice")
        defer {
            node.kill()
            directory.remove()
        }
        let port = node.port
        let own = "127.0.0.1:\(port)"
        let pairs = [
            ("Host", own, "evil.example:\(port)"), ("Origin", "http://\(own)", "http://evil.example"),
            ("Authorization", "Bearer \(node.token)", "Bearer nope"),
        ]
        for (name, good, bad) in pairs {
            for (first, second) in [(good, bad), (bad, good)] {
                var head = "GET /api/me HTTP/1.1\r\n"
                if name != "Host" { head += "Host: \(own)\r\n" }
                if name != "Authorization" { head += "Authorization: Bearer \(node.token)\r\n" }
                head += "\(name): \(first)\r\n\(name): \(second)\r\nConnection: close\r\n\r\n"
                let response = try node.client.send("", "", rawHead: head)
                #expect(response.status == 400, "two \(name) headers (\(first), then \(second)): \(response)")
                #expect(response.errorMessage?.contains("two \(name.lowercased()) headers") == true, "\(response)")
            }
        }
        #expect(try node.client.send("GET", "/api/me", headers: node.bearer).status == 200)
    }

    @Test func moreHeadersThanTheLimit_are431_soALateOriginIsNeverMissed() async throws {
        let (directory, node) = try await APITests.startNode("headers")
        defer {
            node.kill()
            directory.remove()
        }
        let client = node.client
        func head(pads: Int, origin: String?) -> String {
            var text = "GET /api/me HTTP/1.1\r\nHost: 127.0.0.1:\(node.port)\r\nAuthorization: Bearer \(node.token)\r\nConnection: close\r\n"
            for index in 0..<pads { text += "X-Pad-\(index): \(index)\r\n" }
            if let origin { text += "Origin: \(origin)\r\n" }
            return text + "\r\n"
        }
        // 100 headers, the limit: served. A foreign Origin as the 100th: refused.
        #expect(try client.send("", "", rawHead: head(pads: 97, origin: nil)).status == 200)
        #expect(try client.send("", "", rawHead: head(pads: 96, origin: "http://evil.example")).status == 403)
        // An Origin after 100 others: the request is refused whole, never half-checked.
        let late = try client.send("", "", rawHead: head(pads: 97, origin: "http://evil.example"))
        #expect(late.status == 431, "\(late)")
        #expect(late.errorMessage?.contains("more than 100 headers") == true, "\(late)")
        #expect(try client.send("", "", rawHead: head(pads: 500, origin: nil)).status == 431)
        // Headers that do not fit the connection's memory (64 KiB): the library refuses them.
        let huge = "GET /api/me HTTP/1.1\r\nHost: 127.0.0.1:\(node.port)\r\nX-Big: \(String(repeating: "x", count: 100_000))\r\n\r\n"
        let refused = Self.answer(to: huge, port: node.port)
        #expect(refused.status == 431 && refused.closed, "\(refused)")
        #expect(try client.send("GET", "/api/me", headers: node.bearer).status == 200)
    }

    @Test func aBodyWithoutTheTokenOrFromAForeignSite_isRefusedBeforeItIsRead() async throws {
        let (directory, node) = try await APITests.startNode("no-body")
        defer {
            node.kill()
            directory.remove()
        }
        let own = "127.0.0.1:\(node.port)"
        let upload = "POST /api/partitions/lobby/messages HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: \(12 << 20)\r\n"
        // The 12 MiB body is announced and never sent: each answer comes from the headers alone,
        // and the connection is closed after it.
        let cases: [(String, Int)] = [
            ("Host: \(own)\r\n", 401),
            ("Host: \(own)\r\nAuthorization: Bearer \(String(repeating: "0", count: 64))\r\n", 401),
            ("Host: evil.example:\(node.port)\r\nAuthorization: Bearer \(node.token)\r\n", 403),
            ("Host: \(own)\r\nOrigin: http://evil.example\r\nAuthorization: Bearer \(node.token)\r\n", 403),
        ]
        for (headers, status) in cases {
            let started = ContinuousClock.now
            let answer = Self.answer(to: upload + headers + "\r\n", port: node.port)
            #expect(answer.status == status && answer.closed, "\(headers): \(answer) after \(ContinuousClock.now - started)")
        }
        // With the token, the same headers make the server wait for the body.
        let waiting = Self.answer(to: upload + "Host: \(own)\r\nAuthorization: Bearer \(node.token)\r\n\r\n", port: node.port, timeout: .seconds(1))
        #expect(waiting.status == nil && !waiting.closed, "\(waiting)")
    }

    @Test func everyAPIWrite_withABodyThatIsNotJSON_is415() async throws {
        let (directory, node) = try await APITests.startNode("json-only")
        defer {
            node.kill()
            directory.remove()
        }
        let api = try APIClient(node: node)
        let client = node.client
        let body = Array(#"{"name":"lobby","text":"hi"}"#.utf8)
        var writes = 0
        for request in GateTests.documentedRequests(api) where request.method != "GET" {
            let operation = api.checker.operation(request.method, request.template)
            guard operation?["requestBody"] != nil else { continue }
            writes += 1
            for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", nil] {
                var headers = node.bearer
                if let type { headers["Content-Type"] = type }
                let response = try client.send(request.method, request.path, headers: headers, body: body)
                #expect(response.status == 415, "\(request.method) \(request.path) as \(type ?? "no type"): \(response)")
                #expect(response.errorMessage?.contains("application/json") == true, "\(response)")
                for problem in api.checker.check(response, request.method, request.template) { Issue.record(Comment(rawValue: problem)) }
            }
        }
        #expect(writes >= 10, "only \(writes) documented writes with a body")
        // JSON with a charset, in any case, is JSON.
        let joined = try client.send(
            "POST", "/api/rooms", headers: node.bearer.merging(["Content-Type": "Application/JSON; charset=utf-8"]) { a, _ in a },
            body: Array(#"{"name":"lobby"}"#.utf8))
        #expect(joined.status == 201 || joined.status == 200, "\(joined)")
    }
}
