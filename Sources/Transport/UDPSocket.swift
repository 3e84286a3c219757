import Glibc
import Synchronization

/// A datagram and the address it came from.
public struct Datagram: Sendable, Hashable {
    public let bytes: [UInt8]
    /// The sender: beacons carry no IP, so this is how a peer's address is learnt (docs/DESIGN.md §4.1).
    public let source: SocketAddress

    public init(bytes: [UInt8], source: SocketAddress) {
        self.bytes = bytes
        self.source = source
    }
}

/// A UDP socket for discovery beacons: bound with `SO_REUSEADDR` so every node on a host shares
/// the discovery port, and with `SO_BROADCAST` so it may send to broadcast addresses.
///
/// Bound to `0.0.0.0:PORT`, each of several processes receives a datagram sent to
/// `127.255.255.255:PORT`, its own included (NETWORK-TESTS.md); unicast to `127.0.0.1:PORT`
/// reaches only one of them. Receiving is pulled (`receive()` or `datagrams`): the kernel's
/// receive buffer is the only queue, and when a slow reader lets it fill, the kernel drops new
/// datagrams — right for beacons, which repeat. Datagrams over `maxDatagramSize` bytes are
/// dropped and counted in `oversizedDatagramCount`, never delivered cut short.
public final class UDPSocket: Sendable {
    /// The largest datagram delivered (2 KiB; a beacon is 96 bytes).
    public static let maxDatagramSize = 2048

    /// The bound address; its `port` is the real one when bound to port 0.
    public let localAddress: SocketAddress

    private let loop: EventLoop
    private let registration: EventLoop.Registration
    private let state: Mutex<State>

    private struct State {
        var fd: Int32
        var isClosed = false
        var receivers = WaitQueue<Datagram, Void>()
        var senders = WaitQueue<Void, (bytes: [UInt8], to: SocketAddress)>()
        var oversized = 0
    }

    /// Binds `host:port` (`0.0.0.0` to hear broadcasts; port 0 for an ephemeral port), on `loop`.
    public init(host: String = "0.0.0.0", port: UInt16, broadcast: Bool = true, loop: EventLoop = .shared) throws(TransportError) {
        let address = try SocketAddress.resolveBlocking(host: host, port: port)[0]
        let fd = try Descriptor.socket(family: address.addressFamily, type: SOCK_DGRAM)
        do throws(TransportError) {
            try Descriptor.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1, call: "SO_REUSEADDR")
            if broadcast { try Descriptor.setOption(fd, SOL_SOCKET, SO_BROADCAST, 1, call: "SO_BROADCAST") }
            try Descriptor.bind(fd, to: address)
        } catch {
            Descriptor.close(fd)
            throw error
        }
        self.localAddress = Descriptor.localAddress(fd) ?? address
        self.loop = loop
        self.registration = loop.makeRegistration()
        self.state = Mutex(State(fd: fd))
        loop.attach(registration, fd: fd, handler: self)
    }

    deinit {
        close()
    }

    /// Datagrams dropped so far for exceeding `maxDatagramSize` (for `parley doctor`).
    public var oversizedDatagramCount: Int { state.withLock { $0.oversized } }

    /// Sends one datagram to `host:port` (numeric, `localhost`, or a name), at the first of the
    /// host's addresses in this socket's family.
    public func send(_ bytes: [UInt8], to host: String, port: UInt16) async throws {
        let addresses = try await SocketAddress.resolve(host: host, port: port)
        try await send(bytes, to: addresses.first { $0.family == localAddress.family } ?? addresses[0])
    }

    /// Sends one datagram; waits only in the rare case that the kernel's send buffer is full.
    /// Throws `.datagramTooLarge` over `maxDatagramSize`, `.permissionDenied` for a broadcast
    /// address on a socket made with `broadcast: false`.
    public func send(_ bytes: [UInt8], to address: SocketAddress) async throws {
        guard bytes.count <= Self.maxDatagramSize else {
            throw TransportError.datagramTooLarge(size: bytes.count, limit: Self.maxDatagramSize)
        }
        let cancel: @Sendable (UInt64) -> Void = { [self] id in withdraw(id, error: CancellationError()) }
        let _: Void = try await suspend(withdraw: cancel) { id, continuation in
            state.withLock { state in
                var wakeups = Wakeups()
                if state.isClosed {
                    wakeups.resume(continuation, with: .failure(TransportError.closed))
                } else if state.senders.isEmpty, let result = sendLocked(state.fd, bytes, to: address) {
                    wakeups.resume(continuation, with: result)
                } else if Task.isCancelled {
                    wakeups.resume(continuation, with: .failure(CancellationError()))
                } else {
                    state.senders.append(Waiter(id: id, payload: (bytes, address), continuation: continuation))
                    updateInterestLocked(state)
                }
                return wakeups
            }.run()
        }
    }

    /// The next datagram; waits until one arrives. Throws `.closed` once the socket is closed,
    /// `.timedOut` at `deadline`, or `CancellationError`.
    public func receive(deadline: ContinuousClock.Instant? = nil) async throws -> Datagram {
        let cancel: @Sendable (UInt64) -> Void = { [self] id in withdraw(id, error: CancellationError()) }
        return try await suspend(withdraw: cancel) { id, continuation in
            state.withLock { state in
                var wakeups = Wakeups()
                if state.isClosed {
                    wakeups.resume(continuation, with: .failure(TransportError.closed))
                } else if state.receivers.isEmpty, let result = receiveLocked(&state) {
                    wakeups.resume(continuation, with: result)
                } else if Task.isCancelled {
                    wakeups.resume(continuation, with: .failure(CancellationError()))
                } else {
                    var waiter = Waiter(id: id, payload: (), continuation: continuation)
                    if let deadline {
                        let error = TransportError.timedOut(operation: "receive on \(localAddress)")
                        waiter.timer = loop.schedule(at: deadline) { [weak self] in
                            self?.withdraw(id, error: error)
                        }
                    }
                    state.receivers.append(waiter)
                    updateInterestLocked(state)
                }
                return wakeups
            }.run()
        }
    }

    /// Datagrams until the socket closes.
    public var datagrams: Datagrams { Datagrams(socket: self) }

    /// Closes the socket; pending sends and receives fail with `.closed`. Idempotent.
    public func close() {
        state.withLock { state in
            var wakeups = Wakeups()
            guard !state.isClosed else { return wakeups }
            state.isClosed = true
            loop.deregister(registration)
            Descriptor.close(state.fd)
            for waiter in state.receivers.removeAll() {
                wakeups.resume(waiter, throwing: TransportError.closed, loop: loop)
            }
            for waiter in state.senders.removeAll() {
                wakeups.resume(waiter, throwing: TransportError.closed, loop: loop)
            }
            return wakeups
        }.run()
    }

    /// The `datagrams` sequence.
    public struct Datagrams: AsyncSequence, Sendable {
        public typealias Element = Datagram
        let socket: UDPSocket

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(socket: socket) }

        public struct AsyncIterator: AsyncIteratorProtocol {
            let socket: UDPSocket

            public mutating func next() async throws -> Datagram? {
                do {
                    return try await socket.receive()
                } catch TransportError.closed {
                    return nil
                }
            }
        }
    }
}

// MARK: - Kernel calls, under the state lock

extension UDPSocket: IOEventHandler {
    func handleIO(_ ready: IOInterest) {
        state.withLock { state in
            var wakeups = Wakeups()
            guard !state.isClosed else { return wakeups }
            if ready.contains(.read) {
                while let receiver = state.receivers.first, let result = receiveLocked(&state) {
                    _ = state.receivers.popFirst()
                    switch result {
                    case .success(let datagram): wakeups.resume(receiver, returning: datagram, loop: loop)
                    case .failure(let error): wakeups.resume(receiver, throwing: error, loop: loop)
                    }
                }
            }
            if ready.contains(.write) {
                while let sender = state.senders.first,
                    let result = sendLocked(state.fd, sender.payload.bytes, to: sender.payload.to)
                {
                    _ = state.senders.popFirst()
                    wakeups.resume(sender.continuation, with: result)
                }
            }
            updateInterestLocked(state)
            return wakeups
        }.run()
    }

    private func updateInterestLocked(_ state: State) {
        var interest: IOInterest = []
        if !state.receivers.isEmpty { interest.insert(.read) }
        if !state.senders.isEmpty { interest.insert(.write) }
        loop.setInterest(registration, interest)
    }

    /// One datagram, an error, or nil when none is waiting. Oversized ones are counted and
    /// skipped: `MSG_TRUNC` makes `recvfrom` report a datagram's full length even though only
    /// the buffer's worth is copied.
    private func receiveLocked(_ state: inout State) -> Result<Datagram, any Error>? {
        let capacity = Self.maxDatagramSize
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            var received = 0
            var source: SocketAddress?
            let bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
                received = withUnsafeMutablePointer(to: &storage) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                        let size = recvfrom(state.fd, buffer.baseAddress, capacity, Int32(MSG_TRUNC), address, &length)
                        if size >= 0 { source = SocketAddress(address) }
                        return size
                    }
                }
                count = min(max(received, 0), capacity)
            }
            if received > capacity {
                state.oversized += 1
                continue
            }
            if received >= 0 {
                guard let source else { continue }  // not IPv4/IPv6: cannot happen on these sockets
                return .success(
                    Datagram(bytes: received < capacity / 2 ? Array(bytes[..<received]) : bytes, source: source))
            }
            let code = errno
            if Descriptor.wouldBlock(code) { return nil }
            // EINTR, and ICMP errors of earlier sends (ECONNREFUSED…): nothing for a receiver.
            if code == EINTR || code == ECONNREFUSED || code == EHOSTUNREACH || code == ENETUNREACH { continue }
            return .failure(TransportError.fromErrno(code, call: "recvfrom", address: localAddress))
        }
    }

    /// One `sendto`: the outcome, or nil when the kernel's buffer is full.
    private func sendLocked(_ fd: Int32, _ bytes: [UInt8], to address: SocketAddress) -> Result<Void, any Error>? {
        while true {
            let sent = bytes.withUnsafeBytes { buffer in
                address.withSockAddr { sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), $0, $1) }
            }
            if sent >= 0 { return .success(()) }
            let code = errno
            if code == EINTR { continue }
            if Descriptor.wouldBlock(code) { return nil }
            return .failure(TransportError.fromErrno(code, call: "sendto", address: address))
        }
    }

    private func withdraw(_ id: UInt64, error: any Error) {
        state.withLock { state in
            var wakeups = Wakeups()
            if let waiter = state.receivers.remove(id: id) {
                wakeups.resume(waiter, throwing: error, loop: loop)
            } else if let waiter = state.senders.remove(id: id) {
                wakeups.resume(waiter, throwing: error, loop: loop)
            }
            if !state.isClosed { updateInterestLocked(state) }
            return wakeups
        }.run()
    }
}
