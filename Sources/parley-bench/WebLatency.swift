// What a person feels (issue 38): a message posted through one node's web API until the page of
// another node would show it, and a `parley send` process until the message is on another node.
import Dispatch
import Foundation
import Lab
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Whether `--only` asks for a figure of the web latency run of `count` nodes.
func wantsWebLatency(nodes count: Int) -> Bool {
    ["web_latency_p50_ms_\(count)_nodes", "web_latency_p99_ms_\(count)_nodes", "send_latency_p99_ms_\(count)_nodes"].contains(where: isWanted)
}

/// `count` nodes with their web servers, linked; posts through `POST /api/partitions/{lobby}/messages`
/// at 20 a second in total, round robin; on every other node a reader does what the page does:
/// it keeps `GET /api/events` open and, on each `changed` event naming #lobby, asks for what came
/// after the newest message it holds (`GET …/messages?after=ID`). A delivery's latency is from
/// just before the POST to the answer that holds the message, on the bench's monotonic clock.
/// The page itself asks at most every 80 ms (docs/WEB.md, *Events*); the reader asks at once, so
/// this is the node's part of what a person waits for, not the page's pacing. With 3 nodes,
/// `send_latency_p99_ms_3_nodes` follows: `parley send` spawned 20 times, from the spawn (wall
/// clock) to `received_at` on each other node.
func webLatencyBenchmark(nodes count: Int, binary: String) async throws -> [BenchResult?] {
    guard wantsWebLatency(nodes: count) else { return [] }
    sync()
    let cluster = try await BenchCluster(name: "web\(count)", count: count, binary: binary, scratch: scratch)
    cluster.runArguments = ["--web", "127.0.0.1:0"]
    var results: [BenchResult?] = []
    do {
        for index in 0..<count { try cluster.start(index) }
        for index in 0..<count { try await cluster.waitStarted(index) }
        guard await cluster.waitLinked(timeout: 60, poll: .milliseconds(20)) else {
            throw BenchError("\(count) nodes did not all link within 60 s; see \(cluster.logDirectory)")
        }
        var servers: [WebServer] = []
        for node in cluster.nodes { servers.append(try await WebServer.of(node)) }
        results += try webLatency(servers, target: count == 3 ? 10 : 20)
        if count == 3 { results.append(try await sendLatency(cluster)) }
    } catch {
        await cluster.remove()
        throw error
    }
    await cluster.remove()
    return results
}

/// A node's web server: its port and token, from the line `parley run` printed.
struct WebServer: Sendable {
    let port: UInt16
    let token: String

    static func of(_ node: LabNode) async throws -> WebServer {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let line = node.stdout.split(separator: "\n").first(where: { $0.hasPrefix("parley web UI on port ") }),
                let url = line.split(separator: " ").last, let tokenRange = url.range(of: "token="),
                let portText = line.dropFirst("parley web UI on port ".count).split(separator: ":").first, let port = UInt16(portText)
            {
                return WebServer(port: port, token: String(url[tokenRange.upperBound...]))
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw BenchError("\(node.name) printed no web URL")
    }

    func request(_ method: String, _ path: String, body: [UInt8] = []) throws -> (status: Int, body: [UInt8]) {
        try LoopbackHTTP.request(port: port, method: method, path: path, headers: ["Authorization": "Bearer \(token)"], body: body)
    }
}

/// Tells the reader threads to end.
private final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    var isRaised: Bool { flag.load(ordering: .relaxed) }
    func raise() { flag.store(true, ordering: .relaxed) }
}

/// When each post left (`sent`) and when each reader first held it (`found`), by post number.
private final class WebDeliveries: Sendable {
    private let state = Mutex<(sent: [Int: UInt64], found: [Int: [Int: UInt64]])>(([:], [:]))

    func sent(_ number: Int, at nanos: UInt64) { state.withLock { $0.sent[number] = nanos } }

    func found(_ number: Int, by reader: Int, at nanos: UInt64) {
        state.withLock { if $0.found[number]?[reader] == nil { $0.found[number, default: [:]][reader] = nanos } }
    }

    /// Milliseconds from each post to each reader that found it, for posts from `first` on.
    func latencies(from first: Int) -> [Double] {
        state.withLock { state in
            state.found.flatMap { number, readers -> [Double] in
                guard number >= first, let sent = state.sent[number] else { return [] }
                return readers.values.map { Double($0 &- sent) / 1e6 }
            }
        }
    }

    func foundCount(from first: Int) -> Int { state.withLock { $0.found.filter { $0.key >= first }.reduce(0) { $0 + $1.value.count } } }
}

private func webLatency(_ servers: [WebServer], target: Double) throws -> [BenchResult?] {
    let count = servers.count
    let warmup = 20
    let total = warmup + Int(20 * options.latencySeconds)
    let deliveries = WebDeliveries()
    let stop = StopFlag()
    let readersDone = DispatchGroup()
    for (reader, server) in servers.enumerated() {
        readersDone.enter()
        Thread.detachNewThread {
            defer { readersDone.leave() }
            readPage(server, reader: reader, of: count, deliveries: deliveries, stop: stop)
        }
    }
    // Posts at 20/s in total, round robin; each post's number says who wrote it.
    let start = Pacer.monotonicNanos() + 1_000_000_000
    do {
        for number in 0..<total {
            let due = start + UInt64(number) * 50_000_000
            let now = Pacer.monotonicNanos()
            if due > now { usleep(useconds_t((due - now) / 1_000)) }
            let body = Array(#"{"text":"web latency \#(number)"}"#.utf8)
            deliveries.sent(number, at: Pacer.monotonicNanos())
            let answer = try servers[number % count].request("POST", "/api/partitions/\(lobbyPartition.text)/messages", body: body)
            guard (200..<300).contains(answer.status) else {
                throw BenchError("posting through the web API answered \(answer.status): \(String(decoding: answer.body, as: UTF8.self))")
            }
        }
    } catch {
        stop.raise()
        readersDone.wait()
        throw error
    }
    // Every post on every other node, or 10 s.
    let expected = (total - warmup) * (count - 1)
    let deadline = Pacer.monotonicNanos() + 10_000_000_000
    while deliveries.foundCount(from: warmup) < expected, Pacer.monotonicNanos() < deadline { usleep(10_000) }
    stop.raise()
    readersDone.wait()
    let latencies = deliveries.latencies(from: warmup)
    guard latencies.count == expected else { throw BenchError("the readers found \(latencies.count) of \(expected) web deliveries") }
    progress(String(format: "%d nodes, web: %d posts, %d deliveries read back", count, total - warmup, latencies.count))
    return [
        record("web_latency_p50_ms_\(count)_nodes", unit: "ms", value: percentile(latencies, 0.5), reference: "latency_p50_ms_\(count)_nodes"),
        record(
            "web_latency_p99_ms_\(count)_nodes", unit: "ms", value: percentile(latencies, 0.99), reference: "latency_p99_ms_\(count)_nodes",
            target: .atMost(target)),
    ]
}

/// One reader: the event stream of `server`, and a read of what came after the newest message
/// held on each `changed` event that may name #lobby (events that came during a read lead to one
/// more read).
private func readPage(_ server: WebServer, reader: Int, of count: Int, deliveries: WebDeliveries, stop: StopFlag) {
    let lobby = lobbyPartition.text
    let messagesPath = "/api/partitions/\(lobby)/messages"
    var newest: String?
    func read() {
        let path = newest.map { "\(messagesPath)?after=\($0)" } ?? "\(messagesPath)?limit=1"
        guard let answer = try? server.request("GET", path), answer.status == 200,
            let messages = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [[String: Any]]
        else { return }
        let now = Pacer.monotonicNanos()
        for message in messages {
            if let text = message["text"] as? String, text.hasPrefix("web latency "), let number = Int(text.dropFirst("web latency ".count)),
                number % count != reader
            {
                deliveries.found(number, by: reader, at: now)
            }
        }
        if let id = messages.last?["id"] as? String { newest = id }
    }
    read()
    guard let socket = try? LoopbackHTTP.connect(port: server.port) else { return }
    defer { close(socket) }
    let head = "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nAccept: text/event-stream\r\nAuthorization: Bearer \(server.token)\r\n\r\n"
    guard LoopbackHTTP.write(socket, Array(head.utf8)) else { return }
    var pending = ""
    var buffer = [UInt8](repeating: 0, count: 64 << 10)
    while !stop.isRaised {
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 100) > 0 else { continue }
        let got = recv(socket, &buffer, buffer.count, 0)
        guard got > 0 else { return }
        pending += String(decoding: buffer[..<got], as: UTF8.self)
        // Whole events only: each ends with a blank line.
        guard let end = pending.range(of: "\n\n", options: .backwards) else { continue }
        let events = pending[..<end.upperBound]
        pending = String(pending[end.upperBound...])
        let changed = events.components(separatedBy: "event: changed").dropFirst().contains { event in
            event.contains(lobby) || event.contains(#""partitions":[]"#)
        }
        if changed { read() }
    }
}

/// `parley send` spawned 20 times, 100 ms apart, round robin: from the spawn to `received_at` on
/// each other node (both wall clocks of this machine, in microseconds).
private func sendLatency(_ cluster: BenchCluster) async throws -> BenchResult? {
    guard isWanted("send_latency_p99_ms_\(cluster.nodes.count)_nodes") else { return nil }
    let count = cluster.nodes.count
    var spawned: [(text: String, author: Int, micros: UInt64)] = []
    for number in 0..<20 {
        let author = number % count
        let text = "send latency \(number)"
        let micros = UInt64(Date().timeIntervalSince1970 * 1e6)
        let result = await LabProcess.run(
            cluster.binary, ["--data-dir", cluster.nodes[author].dataDirectory, "send", "--room", "lobby", text],
            environment: cluster.environment, captureIn: cluster.logDirectory, timeout: .seconds(30))
        guard result.status == 0 else { throw BenchError("parley send failed: \(result.stderr)") }
        spawned.append((text, author, micros))
        try await Task.sleep(for: .milliseconds(100))
    }
    guard await cluster.waitConverged(lobbyPartition.text, timeout: 30) else { throw BenchError("the cluster did not converge after parley send") }
    var latencies: [Double] = []
    for index in 0..<count {
        let held = StoreReader.receivedMicrosByText(path: cluster.databasePath(index), prefix: "send latency ")
        for sent in spawned where sent.author != index {
            guard let received = held[sent.text] else { continue }
            latencies.append(Double(Int64(received) - Int64(sent.micros)) / 1_000)
        }
    }
    guard latencies.count == spawned.count * (count - 1) else {
        throw BenchError("\(latencies.count) of \(spawned.count * (count - 1)) parley send deliveries found")
    }
    return record("send_latency_p99_ms_\(count)_nodes", unit: "ms", value: percentile(latencies, 0.99))
}

/// Blocking HTTP/1.1 on loopback, one request per connection (`Connection: close`).
enum LoopbackHTTP {
    static func connect(port: UInt16) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw BenchError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(socket)
            throw BenchError("connecting to 127.0.0.1:\(port): errno \(errno)")
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return socket
    }

    static func write(_ socket: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let wrote = bytes[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard wrote > 0 else { return false }
            sent += wrote
        }
        return true
    }

    static func request(port: UInt16, method: String, path: String, headers: [String: String], body: [UInt8]) throws -> (status: Int, body: [UInt8]) {
        let socket = try connect(port: port)
        defer { close(socket) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        guard write(socket, Array((head + "\r\n").utf8) + body) else { throw BenchError("sending \(method) \(path) failed") }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let got = recv(socket, &buffer, buffer.count, 0)
            if got < 0 { throw BenchError("\(method) \(path): no answer (errno \(errno))") }
            if got == 0 { break }
            response += buffer[..<got]
        }
        guard let split = response.firstRange(of: Array("\r\n\r\n".utf8)) else { throw BenchError("\(method) \(path): a malformed answer") }
        let headText = String(decoding: response[..<split.lowerBound], as: UTF8.self)
        let status = headText.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        var content = Array(response[split.upperBound...])
        if headText.lowercased().contains("transfer-encoding: chunked") { content = dechunked(content) }
        return (status, content)
    }

    /// The body of a chunked answer.
    static func dechunked(_ bytes: [UInt8]) -> [UInt8] {
        var body: [UInt8] = []
        var index = 0
        while let lineEnd = bytes[index...].firstRange(of: Array("\r\n".utf8)) {
            let sizeText = String(decoding: bytes[index..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText, radix: 16), size > 0, lineEnd.upperBound + size <= bytes.count else { break }
            body += bytes[lineEnd.upperBound..<(lineEnd.upperBound + size)]
            index = lineEnd.upperBound + size + 2
            guard index < bytes.count else { break }
        }
        return body
    }
}
