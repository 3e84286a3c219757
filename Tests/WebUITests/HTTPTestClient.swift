import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A minimal HTTP/1.1 client over a blocking loopback socket, for tests: one request per
/// connection (`Connection: close`), every read bounded by a timeout. Tests send exactly the
/// bytes they mean to (a forged `Host`, a lying `Content-Length`), which a library would not let
/// them do.
struct HTTPTestClient: Sendable {
    let port: UInt16
    /// How long one read may wait.
    var readTimeoutSeconds = 15

    struct Response: CustomStringConvertible {
        let status: Int
        let headers: [String: String]
        let body: [UInt8]

        var text: String { String(decoding: body, as: UTF8.self) }
        var json: Any? { try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) }
        var object: [String: Any]? { json as? [String: Any] }
        var array: [[String: Any]]? { json as? [[String: Any]] }
        var errorMessage: String? { object?["error"] as? String }
        var description: String { "HTTP \(status) \(headers["content-type"] ?? "") \(text.prefix(600))" }
    }

    enum Failure: Error { case connect(Int32), timeout, malformed(String) }

    /// Sends `method path` with `headers` (Host is added unless given) and `body`.
    func send(
        _ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8] = [], rawHead: String? = nil
    ) throws -> Response {
        let socket = try connect()
        defer { close(socket) }
        var head = rawHead ?? "\(method) \(path) HTTP/1.1\r\n"
        if rawHead == nil {
            var all = headers
            if all.keys.first(where: { $0.lowercased() == "host" }) == nil { all["Host"] = "127.0.0.1:\(port)" }
            if !body.isEmpty && all.keys.first(where: { $0.lowercased() == "content-length" || $0.lowercased() == "transfer-encoding" }) == nil {
                all["Content-Length"] = String(body.count)
            }
            all["Connection"] = "close"
            for (name, value) in all.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
            head += "\r\n"
        }
        try write(socket, Array(head.utf8) + body)
        return try parse(readAll(socket))
    }

    /// Opens `path` as an event stream and reads until `until` holds for the text so far (or the
    /// timeout passes), while `during` runs once the stream is open.
    func stream(
        _ path: String, headers: [String: String], timeout: Duration = .seconds(10), during: () throws -> Void, until: (String) -> Bool
    ) throws -> String {
        let socket = try connect()
        defer { close(socket) }
        var head = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        try write(socket, Array((head + "\r\n").utf8))
        var text = ""
        var ran = false
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var buffer = [UInt8](repeating: 0, count: 16 << 10)
            let count = recv(socket, &buffer, buffer.count, 0)
            if count > 0 { text += String(decoding: buffer[..<count], as: UTF8.self) }
            if count == 0 { break }
            if !ran && text.contains("event: hello") {
                ran = true
                try during()
            }
            if ran && until(text) { return text }
        }
        return text
    }

    /// Sends `GET path` with `headers` again and again on one keep-alive connection, reading each
    /// answer by its `Content-Length`, until the server closes the connection or `max` requests
    /// were answered; returns how many were answered and whether the last said `Connection: close`.
    func keepAlive(_ path: String, headers: [String: String] = [:], max: Int) throws -> (answered: Int, lastSaidClose: Bool) {
        let socket = try connect()
        defer { close(socket) }
        var pending: [UInt8] = []
        var answered = 0
        var saidClose = false
        let request = Array(("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n" + headers.map { "\($0): \($1)\r\n" }.joined() + "\r\n").utf8)
        while answered < max {
            try write(socket, request)
            // Read one response: headers, then Content-Length bytes.
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            func headEnd() -> Int? { (0..<Swift.max(0, pending.count - 3)).first { pending[$0..<$0 + 4].elementsEqual([13, 10, 13, 10]) } }
            while headEnd() == nil {
                let count = recv(socket, &buffer, buffer.count, 0)
                guard count > 0 else { return (answered, saidClose) }
                pending += buffer[..<count]
            }
            let end = headEnd()!
            let head = String(decoding: pending[..<end], as: UTF8.self).lowercased()
            let length =
                head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }.flatMap { Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces)) }
                ?? 0
            while pending.count < end + 4 + length {
                let count = recv(socket, &buffer, buffer.count, 0)
                guard count > 0 else { return (answered, saidClose) }
                pending += buffer[..<count]
            }
            pending.removeFirst(end + 4 + length)
            answered += 1
            saidClose = head.contains("connection: close")
            if saidClose { break }
        }
        // After `Connection: close` the server closes: the next read sees the end.
        var probe = [UInt8](repeating: 0, count: 16)
        if saidClose && recv(socket, &probe, probe.count, 0) > 0 { saidClose = false }
        return (answered, saidClose)
    }

    private func connect() throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure.connect(errno) }
        var timeout = timeval(tv_sec: readTimeoutSeconds, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(socket)
            throw Failure.connect(code)
        }
        return socket
    }

    private func write(_ socket: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            // The server may answer (413) and close before reading everything: stop sending then.
            if sent <= 0 { return }
            offset += sent
        }
    }

    private func readAll(_ socket: Int32) throws -> [UInt8] {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count > 0 {
                data += buffer[..<count]
            } else if count == 0 || errno == ECONNRESET {
                return data
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                throw Failure.timeout
            } else if errno != EINTR {
                return data
            }
        }
    }

    private func parse(_ data: [UInt8]) throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, data.count - 3)).first(where: { Array(data[$0..<$0 + 4]) == separator }) else {
            throw Failure.malformed(String(decoding: data.prefix(200), as: UTF8.self))
        }
        let lines = String(decoding: data[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure.malformed(lines[0]) }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(data[(end + 4)...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = Self.dechunk(body) }
        return Response(status: status, headers: headers, body: body)
    }

    private static func dechunk(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while index < data.count {
            guard let lineEnd = (index..<data.count - 1).first(where: { data[$0] == 13 && data[$0 + 1] == 10 }) else { break }
            let size = Int(String(decoding: data[index..<lineEnd], as: UTF8.self).split(separator: ";")[0], radix: 16) ?? 0
            if size == 0 { break }
            let start = lineEnd + 2
            out += data[start..<min(data.count, start + size)]
            index = start + size + 2
        }
        return out
    }
}
