import Glibc

/// A listening TCP socket: accepts incoming connections, one `accept()` at a time or as the
/// `connections` sequence.
///
/// Accepting is pulled, not pushed: a connection is taken from the kernel only when the caller
/// asks for one, so the kernel's backlog is the bound on waiting connections and a flood cannot
/// grow memory here. Capping unauthenticated connections (docs/DESIGN.md §4.2: in total and per IP) is
/// the caller's job: it sees each connection's `remoteAddress` before reading a byte, and
/// closes the ones over the cap. `close()` stops listening, fails pending `accept()` calls with
/// `.closed` and ends `connections`; connections already accepted live on.
public final class TCPListener: Sendable {
    /// The bound address; its `port` is the real one when the listener was bound to port 0.
    public let localAddress: SocketAddress

    private let acceptor: Acceptor<TCPConnection>

    /// Listens on `host:port` (IPv4 or IPv6; `0.0.0.0` or `::` for every interface; port 0 for
    /// an ephemeral port). `SO_REUSEADDR` lets a restarted node bind while old connections
    /// linger in TIME_WAIT; it does not let two listeners share a port: the second gets
    /// `.addressInUse`. `backlog` bounds connections waiting for `accept()`. A host name (rather
    /// than a numeric address or `localhost`) is resolved on the calling thread. The listener and
    /// the connections it accepts run on `loop`.
    public init(host: String = "0.0.0.0", port: UInt16, backlog: Int32 = 128, loop: EventLoop = .shared) throws(TransportError) {
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
        let localAddress = Descriptor.localAddress(fd) ?? address
        self.localAddress = localAddress
        acceptor = Acceptor(fd: fd, loop: loop, operation: "accept on \(localAddress)") { listeningFD in
            Self.takeOne(from: listeningFD, localAddress: localAddress, loop: loop)
        }
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
        try await acceptor.accept(deadline: deadline)
    }

    /// Incoming connections until the listener closes. Running out of descriptors does not end
    /// the sequence: it pauses 100 ms and tries again, as a listener must keep serving.
    public var connections: Connections { Connections(listener: self) }

    /// Stops listening; idempotent.
    public func close() {
        acceptor.close()
    }

    /// One `accept`: a connection, an error, or nil when none is waiting.
    private static func takeOne(from listeningFD: Int32, localAddress: SocketAddress, loop: EventLoop) -> Result<TCPConnection, any Error>? {
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let (fd, peer) = withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                    let fd = Glibc.accept(listeningFD, address, &length)
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
