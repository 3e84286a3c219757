import CMicroHTTPD
import Foundation
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd: its internal polling thread (epoll) reads requests,
/// this type collects each body under a size limit, suspends the connection while the Swift
/// handler runs on the concurrency pool, then resumes it and sends the reply.
///
/// Nothing of a request is read past its headers before `admit` has seen them: the token, `Host`
/// and `Origin` are checked, the declared length weighed against the route's limit, and a refusal
/// is answered (and the connection closed) before any body byte is accepted. So a connection
/// without the token costs at most the library's pool (`Limits.connectionMemory`) and lives at
/// most `Limits.headerTimeout` (`ConnectionTable`). Headers are read whole or refused: more than
/// `Limits.maxHeaders`, or a second `Host`, `Origin`, `Authorization`, `Cookie`, `Content-Type`,
/// `Content-Length`, `Transfer-Encoding` or `Sec-Fetch-Site`, and the request is refused
/// rather than half-checked. The handler sees a request only once it is complete and within the
/// limits. Streams (`HTTPReply.stream`) stay open until closed or the client leaves. `stop()`
/// closes every stream, waits for them and for running handlers and their answers, then stops
/// the daemon.
// @unchecked: `shared` guards what the library's threads, the handlers' tasks and `stop` share;
// `port` and `connectionCaps` are written once by `start`, before the daemon calls back.
public final class HTTPServer: @unchecked Sendable {
    public typealias Handler = @Sendable (HTTPRequest) async -> HTTPReply
    /// Decides on a request from its headers alone (its body is still unread).
    public typealias Admit = @Sendable (HTTPRequest) -> Admission

    /// What `Admit` decides.
    public enum Admission: Sendable {
        /// Read a body of at most `bodyLimit` bytes, then call the handler. `trusted`: the request
        /// carries the token, so its connection may outlive the header deadline and keep alive.
        case accept(bodyLimit: Int, trusted: Bool)
        /// Answer this now and close the connection; the body is never read.
        case refuse(HTTPResponse)
    }

    /// Limits on what clients may make the server hold.
    public struct Limits: Sendable {
        /// Simultaneous connections (streams included), all addresses together; lowered to fit
        /// the process's descriptor limit. Each may hold `connectionMemory`: 2,048 × 64 KiB =
        /// 128 MiB at most.
        public var connections: UInt32 = 2_048
        /// Simultaneous connections from one IP address. The same number of slots is kept for
        /// 127.0.0.1 (the others share the rest), so the local user always gets in.
        public var connectionsPerAddress: UInt32 = 32
        /// From accept to complete headers, and the whole life of a connection without the token.
        public var headerTimeout: Duration = .seconds(5)
        /// Headers in one request; more is refused (431).
        public var maxHeaders = 100
        /// An idle connection with the token is closed after this many seconds (streams send a
        /// heartbeat more often than this).
        public var idleTimeoutSeconds: UInt32 = 60
        /// Memory for one connection's request line, headers and buffers (libmicrohttpd's pool);
        /// headers that do not fit are refused by the library (431).
        public var connectionMemory = 64 << 10
        /// The longest a handler may take before the request is answered 503.
        public var handlerTimeout: Duration = .seconds(30)
        /// Requests on one keep-alive connection; the last one's answer closes it.
        public var requestsPerConnection: UInt = 1_000
        public init() {}
    }

    /// Descriptors kept for everything but web connections (links, the store, the control
    /// socket) when the total is fitted to the process's limit.
    static let descriptorsForTheRest: rlim_t = 512

    private let handler: Handler
    private let admit: Admit
    private let limits: Limits
    private struct Shared {
        var daemon: MHDHandle?
        var streams: [ObjectIdentifier: EventStream] = [:]
        var running = 0
        var sweeper: Task<Void, Never>?
        var table: ConnectionTable?
    }
    private let shared = Mutex(Shared())
    /// The port it listens on (after `start`).
    public private(set) var port: UInt16 = 0

    /// `admit` decides on each request from its headers (refusal, or the largest body accepted).
    public init(limits: Limits = Limits(), admit: @escaping Admit, handler: @escaping Handler) {
        self.limits = limits
        self.admit = admit
        self.handler = handler
    }

    /// The connection caps in force (after `start`): all together, and per address.
    public private(set) var connectionCaps: (total: UInt32, perAddress: UInt32) = (0, 0)

    /// Binds `host` (an IPv4 address) and `port` (0 picks a free one) and starts serving.
    public func start(host: String, port: UInt16) throws(WebError) {
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else { throw .badAddress("\(host) is not an IPv4 address") }
        let perAddress = max(1, limits.connectionsPerAddress)
        let total = max(2 * perAddress, Self.fitToDescriptors(limits.connections))
        let table = ConnectionTable(headerTimeout: limits.headerTimeout, othersLimit: Int(total - perAddress))
        let flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
        let context = Unmanaged.passUnretained(self).toOpaque()
        shared.withLock { $0.table = table }
        guard
            let started = parley_mhd_start(
                UInt32(flags), address.s_addr, port, total, perAddress, limits.idleTimeoutSeconds, limits.connectionMemory,
                HTTPServer.acceptPolicy, context, HTTPServer.accessHandler, context, HTTPServer.completedHandler, context,
                HTTPServer.connectionNotice, context)
        else {
            throw .cannotListen("cannot listen on \(host):\(port): the port is in use or the address is not on this machine")
        }
        connectionCaps = (total, perAddress)
        let interval = min(.milliseconds(250), limits.headerTimeout / 4)
        let sweeper = Task.detached { [weak table] in
            while !Task.isCancelled, let table {
                table.sweep()
                try? await Task.sleep(for: interval)
            }
        }
        shared.withLock {
            $0.daemon = MHDHandle(started)
            $0.sweeper = sweeper
        }
        self.port = parley_mhd_bound_port(started)
    }

    /// `wanted` connections, or fewer when the process may not open that many descriptors. The
    /// soft limit is raised to the hard one first (the usual soft limit, 1,024, is below the
    /// default cap).
    static func fitToDescriptors(_ wanted: UInt32) -> UInt32 {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return wanted }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        guard limit.rlim_cur != rlim_t.max else { return wanted }  // RLIM_INFINITY
        let available = limit.rlim_cur > descriptorsForTheRest ? limit.rlim_cur - descriptorsForTheRest : 64
        return UInt32(min(rlim_t(wanted), available))
    }

    /// Closes every stream, waits (up to 5 s) for streams and handlers to finish and their answers
    /// to go out, and stops.
    public func stop() async {
        let open = shared.withLock { Array($0.streams.values) }
        for stream in open { stream.close() }
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline, shared.withLock({ !$0.streams.isEmpty || $0.running > 0 }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        let stopping = shared.withLock { shared -> MHDHandle? in
            shared.sweeper?.cancel()
            shared.sweeper = nil
            defer { shared.daemon = nil }
            return shared.daemon
        }
        if let stopping { MHD_stop_daemon(stopping.pointer) }
    }

    // MARK: - One request

    /// What the server knows about one request across the library's calls. Only the library's
    /// thread touches it, except `phase`, which the handler's task sets once (under its lock)
    /// before it resumes the connection.
    // @unchecked: `storedPhase` guards the phase; the other fields are the library thread's alone.
    final class Exchange: @unchecked Sendable {
        enum Phase { case receiving, running, replying(HTTPReply), done }
        private let storedPhase = Mutex(Phase.receiving)
        var phase: Phase {
            get { storedPhase.withLock { $0 } }
            set { storedPhase.withLock { $0 = newValue } }
        }
        var request: HTTPRequest
        var limit: Int
        var tooLarge = false
        /// This request is the connection's last (`Limits.requestsPerConnection`).
        var closesConnection = false
        /// Its handler ran: `running` counts it until the library says the answer went out (or
        /// the client left), so `stop()` does not cut an answer on its way (a wipe's, which
        /// ends the node).
        var countsAsRunning = false

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

    private static let completedHandler: MHD_RequestCompletedCallback = { context, _, state, _ in
        guard let state, let pointer = state.pointee else { return }
        let exchange = Unmanaged<Exchange>.fromOpaque(pointer).takeUnretainedValue()
        if exchange.countsAsRunning, let context {
            Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue().shared.withLock { $0.running -= 1 }
        }
        Unmanaged<Exchange>.fromOpaque(pointer).release()
        state.pointee = nil
    }

    private static let acceptPolicy: MHD_AcceptPolicyCallback = { context, address, length in
        guard let context else { return .NO }
        let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
        guard let table = server.shared.withLock({ $0.table }) else { return .NO }
        return table.mayAccept(address: parley_sockaddr_ipv4(address, length)) ? .YES : .NO
    }

    private static let connectionNotice: MHD_NotifyConnectionCallback = { context, connection, _, code in
        guard let context, let connection else { return }
        let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
        guard let table = server.shared.withLock({ $0.table }) else { return }
        // MHD_CONNECTION_NOTIFY_STARTED (0) and _CLOSED (1); Swift imports neither name.
        switch code.rawValue {
        case 0: table.opened(connection, socket: parley_mhd_connection_fd(connection), address: parley_mhd_connection_ipv4(connection))
        case 1: table.closed(connection)
        default: break
        }
    }

    private func handle(
        _ connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?, upload: UnsafePointer<CChar>?,
        uploadSize: UnsafeMutablePointer<Int>, state: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let pointer = state.pointee else { return begin(connection, url: url, method: method, state: state) }
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
            exchange.countsAsRunning = true
            shared.withLock { $0.running += 1 }
            MHD_suspend_connection(connection)
            let request = exchange.request
            let box = MHDHandle(connection)
            Task { [handler, limits] in
                let reply = await Self.run(handler, request, timeout: limits.handlerTimeout)
                exchange.phase = .replying(reply)
                MHD_resume_connection(box.pointer)
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

    /// The first call of a request: only its headers are in. Everything that can refuse it is
    /// decided here, and a refusal is queued before any of the body is read (the library then
    /// discards the rest and closes the connection).
    private func begin(
        _ connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
        state: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        let scan = Self.headers(connection, max: limits.maxHeaders)
        let request = HTTPRequest(
            method: method.map { String(cString: $0) } ?? "", path: url.map { String(cString: $0) } ?? "/",
            query: Self.values(connection, .GET_ARGUMENT_KIND), headers: scan.values)
        let exchange = Exchange(request: request, limit: 0)
        state.pointee = Unmanaged.passRetained(exchange).toOpaque()
        func refuse(_ response: HTTPResponse) -> MHD_Result {
            exchange.phase = .done
            return queue(response, on: connection, close: true)
        }
        switch shared.withLock({ $0.table })?.startRequest(on: connection) ?? .inTime(requests: 0) {
        case .late:
            return refuse(WebError.headersTooSlow(seconds: Int(limits.headerTimeout.components.seconds)).response)
        case .inTime(let requests):
            exchange.closesConnection = requests >= limits.requestsPerConnection
        }
        if scan.count > limits.maxHeaders { return refuse(WebError.tooManyHeaders(limit: limits.maxHeaders).response) }
        if let name = scan.repeated {
            return refuse(WebError.badRequest("the request has two \(name) headers; send exactly one").response)
        }
        if request.header("content-length") != nil && request.header("transfer-encoding") != nil {
            return refuse(WebError.badRequest("the request has both Content-Length and Transfer-Encoding; send one").response)
        }
        switch admit(request) {
        case .refuse(let response):
            return refuse(response)
        case .accept(let limit, let trusted):
            exchange.limit = limit
            if trusted {
                shared.withLock { $0.table }?.trust(connection)
            } else {
                exchange.closesConnection = true
            }
        }
        if let length = request.header("content-length"), let declared = Int(length), declared > exchange.limit {
            return refuse(WebError.tooLarge(limit: exchange.limit).response)
        }
        return .YES
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
        shared.withLock { $0.streams[key] = stream }
        stream.attach(to: connection) { [weak self] in
            guard let self else { return }
            self.shared.withLock { _ = $0.streams.removeValue(forKey: key) }
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

    /// Headers that decide who is asking and what the body is: a request may carry each once.
    /// (The library looks up the first of several; a check that read another could be fooled.)
    static let singleHeaders: Set = [
        "host", "origin", "authorization", "cookie", "content-type", "content-length", "transfer-encoding", "sec-fetch-site",
    ]

    /// A request's headers, every one of them (up to one past `max`), names lowercased; the
    /// first of a repeated name is kept.
    struct HeaderScan {
        var values: [String: String] = [:]
        var count = 0
        /// The first name of `singleHeaders` seen twice.
        var repeated: String?
    }

    private final class HeaderBox {
        var scan = HeaderScan()
        let max: Int
        init(max: Int) { self.max = max }
    }

    private static func headers(_ connection: OpaquePointer, max: Int) -> HeaderScan {
        let box = HeaderBox(max: max)
        _ = MHD_get_connection_values(connection, .HEADER_KIND, headerIterator, Unmanaged.passUnretained(box).toOpaque())
        return box.scan
    }

    private static let headerIterator: MHD_KeyValueIterator = { context, _, key, value in
        guard let context, let key else { return .YES }
        let box = Unmanaged<HeaderBox>.fromOpaque(context).takeUnretainedValue()
        box.scan.count += 1
        guard box.scan.count <= box.max else { return .NO }
        let name = String(cString: key).lowercased()
        if box.scan.values[name] == nil {
            box.scan.values[name] = value.map { String(cString: $0) } ?? ""
        } else if box.scan.repeated == nil && singleHeaders.contains(name) {
            box.scan.repeated = name
        }
        return .YES
    }

    /// Collects one kind of key/value pairs of the request (at most 100).
    private static func values(_ connection: OpaquePointer, _ kind: MHD_ValueKind) -> [String: String] {
        let box = ValuesBox()
        _ = MHD_get_connection_values(connection, kind, valueIterator, Unmanaged.passUnretained(box).toOpaque())
        return box.values
    }

    private final class ValuesBox {
        var values: [String: String] = [:]
    }

    private static let valueIterator: MHD_KeyValueIterator = { context, _, key, value in
        guard let context, let key else { return .YES }
        let box = Unmanaged<ValuesBox>.fromOpaque(context).takeUnretainedValue()
        guard box.values.count < 100 else { return .NO }
        box.values[String(cString: key)] = value.map { String(cString: $0) } ?? ""
        return .YES
    }
}

/// A libmicrohttpd handle (a daemon or a connection) carried to another thread or kept under a
/// lock: a connection into the task that answers it (used only to resume it), the daemon until
/// `stop`.
// @unchecked: it is only an address; the library says which thread may call what with it.
struct MHDHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}
