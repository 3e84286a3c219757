import Glibc
import Synchronization

/// A listening TCP socket: accepts incoming connections, one `accept()` at a time or as the
/// `connections` sequence.
///
/// Accepting is pulled, not pushed: a connection is taken from the kernel only when the caller
/// asks for one, so the kernel's backlog is the bound on waiting connections and a flood cannot
/// grow memory here. Capping unauthenticated connections (DESIGN §4.2: in total and per IP) is
/// the caller's job: it sees each connection's `remoteAddress` before reading a byte, and
/// closes the ones over the cap. `close()` stops listening, fails pending `accept()` calls with
/// `.closed` and ends `connections`; connections already accepted live on.
public final class TCPListener: Sendable {
    /// The bound address; its `port` is the real one when the listener was bound to port 0.
    public let localAddress: SocketAddress

    private let loop: EventLoop
    private let registration: EventLoop.Registration
    private let state: Mutex<State>

    private struct State {
        var fd: Int32
        var isClosed = false
        var acceptors = WaitQueue<TCPConnection, Void>()
    }

    /// Listens on `host:port` (IPv4 or IPv6; `0.0.0.0` or `::` for every interface; port 0 for
    /// an ephemeral port). `SO_REUSEADDR` lets a restarted node bind while old connections
    /// linger in TIME_WAIT; it does not let two listeners share a port: the second gets
    /// `.addressInUse`. `backlog` bounds connections waiting for `accept()`. A host name (rather
    /// than a numeric address or `localhost`) is resolved on the calling thread.
    public init(host: String = "0.0.0.0", port: UInt16, backlog: Int32 = 128) throws(TransportError) {
        let address = try SocketAddress.resolveBlocking(host: host, port: port)[0]
        let fd = try Descriptor.socket(family: address.addressFamily, type: SOCK_STREAM)
        do throws(TransportError) {
            try Descriptor.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1, call: "SO_REUSEADDR")
            try Descriptor.bind(fd, to: address)
            guard listen(fd, backlog) == 0 else { throw .fromErrno(errno, call: "listen", address: address) }
        } catch {
            Descriptor.close(fd)
            throw error
        }
        self.localAddress = Descriptor.localAddress(fd) ?? address
        self.loop = .shared
        self.registration = loop.makeRegistration()
        self.state = Mutex(State(fd: fd))
        loop.attach(registration, fd: fd, handler: self)
    }

    deinit {
        close()
    }

    /// The bound port.
    public var port: UInt16 { localAddress.port }

    /// The next incoming connection; waits until one arrives.
    ///
    /// Throws `.closed` once the listener is closed, `.timedOut` at `deadline`,
    /// `CancellationError`, or `.system` when the process is out of descriptors (`EMFILE`):
    /// the connection then stays in the backlog, and a later call can take it.
    public func accept(deadline: ContinuousClock.Instant? = nil) async throws -> TCPConnection {
        let cancel: @Sendable (UInt64) -> Void = { [self] id in withdraw(id, error: CancellationError()) }
        return try await suspend(withdraw: cancel) { id, continuation in
            state.withLock { state in
                var wakeups = Wakeups()
                if state.isClosed {
                    wakeups.resume(continuation, with: .failure(TransportError.closed))
                } else if state.acceptors.isEmpty, let result = acceptLocked(&state) {
                    wakeups.resume(continuation, with: result)
                } else if Task.isCancelled {
                    wakeups.resume(continuation, with: .failure(CancellationError()))
                } else {
                    var waiter = Waiter(id: id, payload: (), continuation: continuation)
                    if let deadline {
                        let error = TransportError.timedOut(operation: "accept on \(localAddress)")
                        waiter.timer = loop.schedule(at: deadline) { [weak self] in
                            self?.withdraw(id, error: error)
                        }
                    }
                    state.acceptors.append(waiter)
                    loop.setInterest(registration, .read)
                }
                return wakeups
            }.run()
        }
    }

    /// Incoming connections until the listener closes. Running out of descriptors does not end
    /// the sequence: it pauses 100 ms and tries again, as a listener must keep serving.
    public var connections: Connections { Connections(listener: self) }

    /// Stops listening; idempotent.
    public func close() {
        state.withLock { state in
            var wakeups = Wakeups()
            guard !state.isClosed else { return wakeups }
            state.isClosed = true
            loop.deregister(registration)
            Descriptor.close(state.fd)
            for waiter in state.acceptors.removeAll() {
                wakeups.resume(waiter, throwing: TransportError.closed, loop: loop)
            }
            return wakeups
        }.run()
    }

    /// One `accept`: a connection, an error, or nil when none is waiting.
    private func acceptLocked(_ state: inout State) -> Result<TCPConnection, any Error>? {
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let (fd, peer) = withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                    let fd = Glibc.accept(state.fd, address, &length)
                    return (fd, fd >= 0 ? SocketAddress(address) : nil)
                }
            }
            if fd >= 0 {
                Descriptor.prepareAccepted(fd)
                let remote = peer ?? localAddress
                let local = Descriptor.localAddress(fd) ?? localAddress
                return .success(TCPConnection(fd: fd, local: local, remote: remote, isConnecting: false, loop: loop))
            }
            let code = errno
            // The connection died in the backlog, or a signal interrupted: take the next one.
            if code == EINTR || code == ECONNABORTED || code == EPROTO { continue }
            if Descriptor.wouldBlock(code) { return nil }
            return .failure(TransportError.fromErrno(code, call: "accept", address: localAddress))
        }
    }

    private func withdraw(_ id: UInt64, error: any Error) {
        state.withLock { state in
            var wakeups = Wakeups()
            if let waiter = state.acceptors.remove(id: id) {
                wakeups.resume(waiter, throwing: error, loop: loop)
                if state.acceptors.isEmpty, !state.isClosed { loop.setInterest(registration, []) }
            }
            return wakeups
        }.run()
    }

    /// The `connections` sequence.
    public struct Connections: AsyncSequence, Sendable {
        public typealias Element = TCPConnection
        let listener: TCPListener

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(listener: listener) }

        public struct AsyncIterator: AsyncIteratorProtocol {
            let listener: TCPListener

            public mutating func next() async throws -> TCPConnection? {
                while true {
                    do {
                        return try await listener.accept()
                    } catch TransportError.closed {
                        return nil
                    } catch let error as TransportError where error.isResourceExhaustion {
                        try await Task.sleep(for: .milliseconds(100))
                    }
                }
            }
        }
    }
}

extension TCPListener: IOEventHandler {
    func handleIO(_ ready: IOInterest) {
        state.withLock { state in
            var wakeups = Wakeups()
            guard !state.isClosed else { return wakeups }
            while let acceptor = state.acceptors.first, let result = acceptLocked(&state) {
                _ = state.acceptors.popFirst()
                switch result {
                case .success(let connection): wakeups.resume(acceptor, returning: connection, loop: loop)
                case .failure(let error): wakeups.resume(acceptor, throwing: error, loop: loop)
                }
            }
            if state.acceptors.isEmpty { loop.setInterest(registration, []) }
            return wakeups
        }.run()
    }
}
