import Glibc

extension TCPConnection {
    /// The default time a connect may take (docs/DESIGN.md §4.2 gives the whole handshake 5 s).
    public static let defaultConnectTimeout: Duration = .seconds(5)

    /// Connects to `host:port`: a numeric IPv4/IPv6 address, `localhost`, or a name.
    ///
    /// With several addresses (`localhost`, a dual-stack name) each is tried in turn within
    /// the one `timeout`, moving on after a refusal or an unreachable network. Throws
    /// `.connectionRefused`, `.timedOut`, `.unreachable`, `.hostNotFound`, or
    /// `CancellationError` (the half-open socket is closed in every case). The connection runs
    /// on `loop`.
    public static func connect(
        host: String, port: UInt16, timeout: Duration = defaultConnectTimeout, loop: EventLoop = .shared
    ) async throws
        -> TCPConnection
    {
        let deadline = ContinuousClock.now + timeout
        var lastError: any Error = TransportError.hostNotFound(host: host, reason: "no address")
        for address in try await SocketAddress.resolve(host: host, port: port) {
            do {
                return try await connect(to: address, deadline: deadline, loop: loop)
            } catch let error as TransportError {
                switch error {
                case .connectionRefused, .unreachable, .addressNotAvailable: lastError = error
                default: throw error
                }
            }
        }
        throw lastError
    }

    /// Connects to one address; see `connect(host:port:timeout:)`. With `local`, the socket is
    /// bound to that address first (port 0: any), so the peer sees the connection come from it —
    /// e.g. a test's attacker on 127.0.0.7 while honest nodes use 127.0.0.1. Throws
    /// `.addressNotAvailable` when `local` is not an address of this host.
    public static func connect(
        to address: SocketAddress, from local: SocketAddress? = nil, timeout: Duration = defaultConnectTimeout, loop: EventLoop = .shared
    ) async throws
        -> TCPConnection
    {
        try await connect(to: address, from: local, deadline: .now + timeout, loop: loop)
    }

    static func connect(
        to address: SocketAddress, from source: SocketAddress? = nil, deadline: ContinuousClock.Instant, loop: EventLoop = .shared
    ) async throws -> TCPConnection {
        let fd = try Descriptor.socket(family: address.addressFamily, type: SOCK_STREAM)
        if let source, source.withSockAddr({ Glibc.bind(fd, $0, $1) }) != 0 {
            let code = errno
            Descriptor.close(fd)
            throw TransportError.fromErrno(code, call: "bind", address: source)
        }
        let status = address.withSockAddr { Glibc.connect(fd, $0, $1) }
        let code = errno
        // EINTR leaves the connect running in the background, exactly like EINPROGRESS.
        guard status == 0 || code == EINPROGRESS || code == EINTR else {
            Descriptor.close(fd)
            throw TransportError.fromErrno(code, call: "connect", address: address)
        }
        // The kernel picks the local address and port at `connect`, so it is known already.
        let wildcard = address.family == .ipv4 ? "0.0.0.0" : "::"
        let local = Descriptor.localAddress(fd) ?? (try! SocketAddress(ipAddress: wildcard, port: 0))
        let connection = TCPConnection(fd: fd, local: local, remote: address, isConnecting: status != 0, loop: loop)
        if status != 0 {
            do {
                try await connection.waitUntilConnected(deadline: deadline)
            } catch {
                connection.close()
                throw error
            }
        }
        return connection
    }

    private func waitUntilConnected(deadline: ContinuousClock.Instant) async throws {
        let cancel: @Sendable (UInt64) -> Void = { [self] id in abandonConnect(id, error: CancellationError()) }
        let _: Void = try await suspend(withdraw: cancel) { id, continuation in
            state.withLock { state in
                var wakeups = Wakeups()
                if let reason = state.closeReason {
                    wakeups.resume(continuation, with: .failure(reason))
                } else if !state.isConnecting {
                    wakeups.resume(continuation, with: .success(()))
                } else if Task.isCancelled {
                    wakeups.resume(continuation, with: .failure(CancellationError()))
                } else {
                    var waiter = Waiter<Void, Void>(id: id, payload: (), continuation: continuation)
                    let error = TransportError.timedOut(operation: "connect to \(remoteAddress)")
                    waiter.timer = loop.schedule(at: deadline) { [weak self] in
                        self?.abandonConnect(id, error: error)
                    }
                    state.connectWaiter = waiter
                    updateInterestLocked(&state)
                }
                return wakeups
            }.run()
        }
    }

    /// The socket became writable while connecting: the connect finished, well or not.
    func finishConnectLocked(_ state: inout State, wakeups: inout Wakeups) {
        let code = Descriptor.pendingError(state.fd)
        if code == 0 {
            state.isConnecting = false
            if let waiter = state.connectWaiter { wakeups.resume(waiter, returning: (), loop: loop) }
            state.connectWaiter = nil
            return
        }
        guard !Descriptor.wouldBlock(code) else { return }
        let error = TransportError.fromErrno(code, call: "connect", address: remoteAddress)
        if let waiter = state.connectWaiter { wakeups.resume(waiter, throwing: error, loop: loop) }
        state.connectWaiter = nil
        // A failed socket stays writable: close it now, or the loop would report it forever.
        closeLocked(&state, reason: error, wakeups: &wakeups)
    }

    /// The connect missed its deadline or its task was cancelled: give up on the socket.
    private func abandonConnect(_ id: UInt64, error: any Error) {
        state.withLock { state in
            var wakeups = Wakeups()
            if let waiter = state.connectWaiter, waiter.id == id {
                state.connectWaiter = nil
                wakeups.resume(waiter, throwing: error, loop: loop)
                closeLocked(&state, reason: .closed, wakeups: &wakeups)
            }
            return wakeups
        }.run()
    }
}
