import CMicroHTTPD
import Foundation

/// An HTTP/1.1 server on libmicrohttpd: its internal polling thread (epoll) reads requests,
/// this type collects each body under a size limit, suspends the connection while the Swift
/// handler runs on the concurrency pool, then resumes it and sends the reply.
///
/// The handler sees a request only once it is complete and within the limits; a body over the
/// limit is answered 413 without ever reaching it. Streams (`HTTPReply.stream`) stay open until
/// closed or the client leaves. `stop()` closes every stream, waits for them and for running
/// handlers, then stops the daemon.
public final class HTTPServer: @unchecked Sendable {
    public typealias Handler = @Sendable (HTTPRequest) async -> HTTPReply

    /// Limits on what one client may make the server hold.
    public struct Limits: Sendable {
        /// Simultaneous connections (streams included).
        public var connections: UInt32 = 64
        /// An idle connection is closed after this many seconds (streams send a heartbeat
        /// more often than this).
        public var idleTimeoutSeconds: UInt32 = 60
        /// Memory for one connection's headers and buffers (libmicrohttpd's pool).
        public var connectionMemory = 64 << 10
        /// The longest a handler may take before the request is answered 503.
        public var handlerTimeout: Duration = .seconds(30)
        /// Requests on one keep-alive connection; the last one's answer closes it.
        public var requestsPerConnection: UInt = 1_000
        public init() {}
    }

    private let handler: Handler
    private let bodyLimit: @Sendable (_ method: String, _ path: String) -> Int
    private let limits: Limits
    private let lock = NSLock()
    private var daemon: OpaquePointer?
    private var streams: [ObjectIdentifier: EventStream] = [:]
    private var running = 0
    /// The port it listens on (after `start`).
    public private(set) var port: UInt16 = 0

    /// `bodyLimit` gives the largest body accepted for a method and path (413 above it).
    public init(limits: Limits = Limits(), bodyLimit: @escaping @Sendable (String, String) -> Int, handler: @escaping Handler) {
        self.limits = limits
        self.bodyLimit = bodyLimit
        self.handler = handler
    }

    /// Binds `host` (an IPv4 address) and `port` (0 picks a free one) and starts serving.
    public func start(host: String, port: UInt16) throws(WebError) {
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else { throw .badAddress("\(host) is not an IPv4 address") }
        let flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard
            let started = parley_mhd_start(
                UInt32(flags), address.s_addr, port, limits.connections, limits.idleTimeoutSeconds, limits.connectionMemory,
                HTTPServer.accessHandler, context, HTTPServer.completedHandler, context)
        else {
            throw .cannotListen("cannot listen on \(host):\(port): the port is in use or the address is not on this machine")
        }
        lock.withLock { daemon = started }
        self.port = parley_mhd_bound_port(started)
    }

    /// Closes every stream, waits (up to 5 s) for streams and handlers to finish, and stops.
    public func stop() async {
        let open = lock.withLock { Array(streams.values) }
        for stream in open { stream.close() }
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline, lock.withLock({ !streams.isEmpty || running > 0 }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        let stopping = lock.withLock { () -> OpaquePointer? in
            defer { daemon = nil }
            return daemon
        }
        if let stopping { MHD_stop_daemon(stopping) }
    }

    // MARK: - One request

    /// What the server knows about one request across the library's calls. Only the library's
    /// thread touches it, except `phase`, which the handler's task sets once (under the lock)
    /// before it resumes the connection.
    final class Exchange: @unchecked Sendable {
        enum Phase { case receiving, running, replying(HTTPReply), done }
        private let lock = NSLock()
        private var storedPhase = Phase.receiving
        var phase: Phase {
            get { lock.withLock { storedPhase } }
            set { lock.withLock { storedPhase = newValue } }
        }
        var request: HTTPRequest
        var limit: Int
        var tooLarge = false
        /// This request is the connection's last (`Limits.requestsPerConnection`).
        var closesConnection = false

        init(request: HTTPRequest, limit: Int) {
            self.request = request
            self.limit = limit
        }
    }

    private static let accessHandler: MHD_AccessHandlerCallback = { context, connection, url, method, _, upload, uploadSize, state in
        guard let context, let connection, let state, let uploadSize else { return .NO }
        let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
        return server.handle(connection, url: url, method: method, upload: upload, uploadSize: uploadSize, state: state)
    }

    private static let completedHandler: MHD_RequestCompletedCallback = { _, _, state, _ in
        guard let state, let pointer = state.pointee else { return }
        Unmanaged<Exchange>.fromOpaque(pointer).release()
        state.pointee = nil
    }

    private func handle(
        _ connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?, upload: UnsafePointer<CChar>?,
        uploadSize: UnsafeMutablePointer<Int>, state: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let pointer = state.pointee else {
            // First call: headers only. Refuse a declared body over the limit at once.
            let request = HTTPRequest(
                method: method.map { String(cString: $0) } ?? "", path: url.map { String(cString: $0) } ?? "/",
                query: Self.values(connection, .GET_ARGUMENT_KIND), headers: Self.values(connection, .HEADER_KIND, lowercase: true))
            let exchange = Exchange(request: request, limit: bodyLimit(request.method, request.path))
            exchange.closesConnection = parley_mhd_count_request(connection) >= limits.requestsPerConnection
            state.pointee = Unmanaged.passRetained(exchange).toOpaque()
            if let length = request.header("content-length"), let declared = Int(length), declared > exchange.limit {
                exchange.phase = .done
                return queue(WebError.tooLarge(limit: exchange.limit).response, on: connection)
            }
            return .YES
        }
        let exchange = Unmanaged<Exchange>.fromOpaque(pointer).takeUnretainedValue()
        switch exchange.phase {
        case .receiving:
            if uploadSize.pointee > 0 {
                if !exchange.tooLarge, let upload {
                    if exchange.request.body.count + uploadSize.pointee > exchange.limit {
                        exchange.tooLarge = true
                        exchange.request.body = []
                    } else {
                        upload.withMemoryRebound(to: UInt8.self, capacity: uploadSize.pointee) { bytes in
                            exchange.request.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: uploadSize.pointee))
                        }
                    }
                }
                uploadSize.pointee = 0
                return .YES
            }
            if exchange.tooLarge {
                exchange.phase = .done
                return queue(WebError.tooLarge(limit: exchange.limit).response, on: connection, close: true)
            }
            exchange.phase = .running
            lock.withLock { running += 1 }
            MHD_suspend_connection(connection)
            let request = exchange.request
            let box = ConnectionBox(connection)
            Task { [handler, limits] in
                let reply = await Self.run(handler, request, timeout: limits.handlerTimeout)
                exchange.phase = .replying(reply)
                MHD_resume_connection(box.connection)
                self.lock.withLock { self.running -= 1 }
            }
            return .YES
        case .running:
            return .YES
        case .replying(let reply):
            exchange.phase = .done
            switch reply {
            case .response(let response): return queue(response, on: connection, close: exchange.closesConnection)
            case .stream(let stream): return queue(stream, on: connection)
            }
        case .done:
            uploadSize.pointee = 0
            return .YES
        }
    }

    /// Runs the handler with a deadline; past it the client gets 503 (the handler's work goes on).
    private static func run(_ handler: @escaping Handler, _ request: HTTPRequest, timeout: Duration) async -> HTTPReply {
        await withTaskGroup(of: HTTPReply?.self) { group in
            group.addTask { await handler(request) }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .response(WebError.unavailable("the node did not answer in time; try again").response)
        }
    }

    private func queue(_ response: HTTPResponse, on connection: OpaquePointer, close: Bool = false) -> MHD_Result {
        let made = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let made else { return .NO }
        defer { MHD_destroy_response(made) }
        let headers = response.headers + (close ? [("Connection", "close")] : [])
        for (name, value) in Self.withCommonHeaders(headers) { MHD_add_response_header(made, name, value) }
        return MHD_queue_response(connection, UInt32(response.status), made)
    }

    private func queue(_ stream: EventStream, on connection: OpaquePointer) -> MHD_Result {
        let retained = Unmanaged.passRetained(stream).toOpaque()
        guard
            let made = MHD_create_response_from_callback(
                parley_mhd_size_unknown(), 16 << 10, HTTPServer.streamReader, retained, HTTPServer.streamFree)
        else {
            Unmanaged<EventStream>.fromOpaque(retained).release()
            return .NO
        }
        defer { MHD_destroy_response(made) }
        for (name, value) in Self.withCommonHeaders([("Content-Type", "text/event-stream; charset=utf-8")]) {
            MHD_add_response_header(made, name, value)
        }
        let key = ObjectIdentifier(stream)
        lock.withLock { streams[key] = stream }
        stream.attach(to: connection) { [weak self] in
            guard let self else { return }
            self.lock.withLock { _ = self.streams.removeValue(forKey: key) }
        }
        return MHD_queue_response(connection, 200, made)
    }

    private static let streamReader: MHD_ContentReaderCallback = { context, _, buffer, max in
        guard let context, let buffer else { return parley_mhd_end_with_error() }
        return Unmanaged<EventStream>.fromOpaque(context).takeUnretainedValue().read(into: buffer, max: max)
    }

    private static let streamFree: MHD_ContentReaderFreeCallback = { context in
        guard let context else { return }
        let stream = Unmanaged<EventStream>.fromOpaque(context)
        stream.takeUnretainedValue().finished()
        stream.release()
    }

    /// Sent with every response: no caching of private data, no sniffing, no framing by other
    /// sites, and a strict content security policy (the page runs only its own script).
    static let commonHeaders = [
        ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"), ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
        (
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'"
        ),
    ]

    /// `headers` plus each common header they do not set themselves.
    static func withCommonHeaders(_ headers: [(String, String)]) -> [(String, String)] {
        let given = Set(headers.map { $0.0.lowercased() })
        return headers + commonHeaders.filter { !given.contains($0.0.lowercased()) }
    }

    // MARK: - Headers and query arguments

    /// Collects one kind of key/value pairs of the request (at most 100).
    private static func values(_ connection: OpaquePointer, _ kind: MHD_ValueKind, lowercase: Bool = false) -> [String: String] {
        let box = ValuesBox(lowercase: lowercase)
        _ = MHD_get_connection_values(connection, kind, valueIterator, Unmanaged.passUnretained(box).toOpaque())
        return box.values
    }

    private final class ValuesBox {
        var values: [String: String] = [:]
        let lowercase: Bool
        init(lowercase: Bool) { self.lowercase = lowercase }
    }

    private static let valueIterator: MHD_KeyValueIterator = { context, _, key, value in
        guard let context, let key else { return .YES }
        let box = Unmanaged<ValuesBox>.fromOpaque(context).takeUnretainedValue()
        guard box.values.count < 100 else { return .NO }
        let name = String(cString: key)
        box.values[box.lowercase ? name.lowercased() : name] = value.map { String(cString: $0) } ?? ""
        return .YES
    }
}

/// A connection handle carried into the task that answers it (used only to resume it).
private struct ConnectionBox: @unchecked Sendable {
    let connection: OpaquePointer
    init(_ connection: OpaquePointer) { self.connection = connection }
}
