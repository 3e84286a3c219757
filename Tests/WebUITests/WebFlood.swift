import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Raw TCP sockets to a node's web port from a loopback address of the test's choosing
/// (127.0.0.2, …: bound before connecting), so the node sees other clients than the honest one
/// on 127.0.0.1.
enum RawSocket {
    /// A connected, non-blocking socket from `source` to 127.0.0.1:`port`, or nil (the connect
    /// waits at most `timeout`).
    static func connect(port: UInt16, from source: String, timeout: Duration = .milliseconds(200)) -> Int32? {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return nil }
        let millis = Int(timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        var wait = timeval(tv_sec: millis / 1_000, tv_usec: (millis % 1_000) * 1_000)
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, connected == 0 else {
            close(socket)
            return nil
        }
        _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) | O_NONBLOCK)
        return socket
    }

    /// Sends what the socket takes now; false when the connection is gone.
    @discardableResult
    static func send(_ socket: Int32, _ bytes: [UInt8]) -> Bool {
        let sent = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return sent >= 0 || errno == EAGAIN || errno == EWOULDBLOCK
    }

    /// Reads what is there without waiting: the bytes (maybe none), and whether the connection
    /// is still open (false once the server closed it).
    static func drain(_ socket: Int32) -> (bytes: [UInt8], open: Bool) {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 {
                data += buffer[..<count]
                continue
            }
            if count == 0 { return (data, false) }
            return (data, errno == EAGAIN || errno == EWOULDBLOCK)
        }
    }

    /// Whether the server closed the connection within `timeout` (what it sent before is read
    /// and dropped).
    static func closedByServer(_ socket: Int32, within timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            if !drain(socket).open { return true }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            var entry = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            _ = poll(&entry, 1, Int32(min(50, left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)))
        }
    }

    /// The largest number of descriptors this process may open, after raising its soft limit to
    /// the hard one.
    static func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1_024 }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return limit.rlim_cur == rlim_t.max ? 1 << 20 : Int(limit.rlim_cur)  // RLIM_INFINITY
    }
}

/// Many hostile web connections held against one node from other loopback addresses, on a
/// thread of their own: half announce a 12 MiB upload without the token and send the start of
/// it, half send a request line and then one header byte a second and never finish. Whatever
/// the server closes is opened again a second later, so the pressure never lets up while it
/// runs.
// @unchecked: `shared` guards the figures and the stop mark; `slots` is the flood thread's alone,
// and `thread` is written by `start` and read by `stop`, on the test's task.
final class WebFlood: @unchecked Sendable {
    enum Kind { case body, slow }

    struct Figures: CustomStringConvertible {
        /// Connections opened, all told.
        var opened = 0
        /// Connects that failed (refused, or not accepted in time).
        var failedConnects = 0
        /// Connections the server closed.
        var closedByServer = 0
        /// The most connections open at once (as the client sees them).
        var maxOpen = 0
        var description: String {
            "opened \(opened), most open at once \(maxOpen), closed by the server \(closedByServer), failed connects \(failedConnects)"
        }
    }

    private struct Slot {
        let kind: Kind
        let source: String
        var socket: Int32 = -1
        var sentBody = 0
        var nextByte = ContinuousClock.now
        /// A closed connection is opened again from then on.
        var reopenAt = ContinuousClock.now
    }

    let port: UInt16
    /// Bytes of the announced body each upload connection sends before it stalls.
    let bodyBytes: Int
    private var slots: [Slot]
    private let shared = Mutex((figures: Figures(), stopping: false))
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    /// `connections` from 127.0.0.2 on, `perAddress` from each.
    init(port: UInt16, connections: Int, perAddress: Int, bodyBytes: Int = 256 << 10) {
        self.port = port
        self.bodyBytes = bodyBytes
        precondition(2 + (connections - 1) / perAddress < 255, "more source addresses than 127.0.0.2 … 127.0.0.254")
        slots = (0..<connections).map { index in
            Slot(kind: index % 2 == 0 ? .body : .slow, source: "127.0.0.\(2 + index / perAddress)")
        }
    }

    var current: Figures { shared.withLock { $0.figures } }

    func start() {
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.start()
        self.thread = thread
    }

    /// Stops, and closes every connection.
    func stop() {
        shared.withLock { $0.stopping = true }
        if thread != nil { finished.wait() }
        thread = nil
    }

    private func run() {
        let upload = Array(
            ("POST /api/partitions/lobby/messages HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(12 << 20)\r\n\r\n{\"text\":\"").utf8)
        let slow = Array("GET /api/me HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nX-Slow: ".utf8)
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 16 << 10)
        // One pass: open what is due, send what is due, then one poll() over every socket for
        // what the server sent or closed (the flood's own CPU stays small beside the node's).
        var entries: [pollfd] = []
        var owners: [Int] = []
        while !shared.withLock({ $0.stopping }) {
            let now = ContinuousClock.now
            entries.removeAll(keepingCapacity: true)
            owners.removeAll(keepingCapacity: true)
            for index in slots.indices {
                if slots[index].socket < 0 {
                    guard now >= slots[index].reopenAt else { continue }
                    guard let socket = RawSocket.connect(port: port, from: slots[index].source) else {
                        shared.withLock { $0.figures.failedConnects += 1 }
                        slots[index].reopenAt = now + .seconds(1)
                        continue
                    }
                    slots[index].socket = socket
                    slots[index].sentBody = 0
                    slots[index].nextByte = now + .seconds(1)
                    RawSocket.send(socket, slots[index].kind == .body ? upload : slow)
                    shared.withLock { $0.figures.opened += 1 }
                }
                let socket = slots[index].socket
                switch slots[index].kind {
                case .body where slots[index].sentBody < bodyBytes:
                    RawSocket.send(socket, chunk)
                    slots[index].sentBody += chunk.count
                case .slow where now >= slots[index].nextByte:
                    RawSocket.send(socket, [UInt8(ascii: "x")])
                    slots[index].nextByte = now + .seconds(1)
                default:
                    break
                }
                entries.append(pollfd(fd: socket, events: Int16(POLLIN), revents: 0))
                owners.append(index)
            }
            shared.withLock { $0.figures.maxOpen = max($0.figures.maxOpen, entries.count) }
            guard poll(&entries, nfds_t(entries.count), 50) > 0 else { continue }
            for (entry, index) in zip(entries, owners) where entry.revents != 0 && !RawSocket.drain(entry.fd).open {
                close(entry.fd)
                slots[index].socket = -1
                slots[index].reopenAt = .now + .seconds(1)
                shared.withLock { $0.figures.closedByServer += 1 }
            }
        }
        for slot in slots where slot.socket >= 0 { close(slot.socket) }
    }
}
