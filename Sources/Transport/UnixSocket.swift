import Glibc

/// A listening Unix domain stream socket at a path: a node's control socket (`control.sock`).
///
/// The socket file is created with `mode` (0600: only the owner may connect, since whoever
/// connects controls the node) before `listen`, so no client can connect while it still has the
/// umask's permissions. An existing file at `path` makes `init` fail with `EADDRINUSE`: the
/// caller decides whether it is stale (it holds the data directory's lock) and removes it first.
/// `close()` stops listening and removes the file. Accepting is pulled, as on `TCPListener`.
public final class UnixListener: Sendable {
    /// The longest path accepted, in bytes (the kernel's `sun_path` less its NUL: 107).
    public static var maxPathBytes: Int { UnixAddress.maxPathBytes }

    /// The socket file.
    public let path: String

    private let acceptor: Acceptor<UnixConnection>

    /// Binds and listens at `path` (at most `maxPathBytes` bytes).
    public init(path: String, mode: mode_t = 0o600, backlog: Int32 = 16, loop: EventLoop = .shared) throws(TransportError) {
        let fd = try Descriptor.socket(family: AF_UNIX, type: SOCK_STREAM)
        do throws(TransportError) {
            let status = try UnixAddress.withSockAddr(path) { Glibc.bind(fd, $0, $1) }
            guard status == 0 else {
                let code = errno
                throw .system(call: "bind \(path)", errno: code, message: TransportError.message(for: code))
            }
            guard chmod(path, mode) == 0, listen(fd, backlog) == 0 else {
                let code = errno
                unlink(path)
                throw .system(call: "listen \(path)", errno: code, message: TransportError.message(for: code))
            }
        } catch {
            Descriptor.close(fd)
            throw error
        }
        self.path = path
        acceptor = Acceptor(
            fd: fd, loop: loop, operation: "accept on \(path)",
            takeOne: { listeningFD in Self.takeOne(from: listeningFD, path: path, loop: loop) },
            onClose: { unlink(path) })
    }

    deinit {
        close()
    }

    /// The next client; waits until one connects. Throws `.closed` once the listener is closed,
    /// or `CancellationError`.
    public func accept() async throws -> UnixConnection {
        try await acceptor.accept(deadline: nil)
    }

    /// Stops listening and removes the socket file; idempotent.
    public func close() {
        acceptor.close()
    }

    private static func takeOne(from listeningFD: Int32, path: String, loop: EventLoop) -> Result<UnixConnection, any Error>? {
        while true {
            let fd = Glibc.accept(listeningFD, nil, nil)
            if fd >= 0 {
                Descriptor.prepareAccepted(fd)
                return .success(UnixConnection(fd: fd, path: path, loop: loop))
            }
            let code = errno
            if code == EINTR || code == ECONNABORTED { continue }
            if Descriptor.wouldBlock(code) { return nil }
            return .failure(TransportError.system(call: "accept \(path)", errno: code, message: TransportError.message(for: code)))
        }
    }
}

/// One connection on a Unix domain stream socket, with the reads, writes, deadlines and
/// closing rules of `TCPConnection` (whose stream machinery it uses; only the addresses differ).
public final class UnixConnection: Sendable {
    /// The socket file this connection went through.
    public let path: String
    private let stream: TCPConnection

    init(fd: Int32, path: String, loop: EventLoop) {
        self.path = path
        // The stream engine wants IP addresses for its messages; a Unix socket has none.
        let none = try! SocketAddress(ipAddress: "0.0.0.0", port: 0)
        stream = TCPConnection(fd: fd, local: none, remote: none, isConnecting: false, loop: loop, isTCP: false)
    }

    /// Connects to the listener at `path`. Throws `.noSocketListener` when nobody listens there
    /// (no file, or a stale one), `.socketPathTooLong`, or `.system`.
    public static func connect(path: String) throws(TransportError) -> UnixConnection {
        let fd = try Descriptor.socket(family: AF_UNIX, type: SOCK_STREAM)
        let status: Int32
        do {
            status = try UnixAddress.withSockAddr(path) { Glibc.connect(fd, $0, $1) }
        } catch {
            Descriptor.close(fd)
            throw error
        }
        // A local stream connect completes at once or fails; EAGAIN means a full backlog.
        guard status == 0 else {
            let code = errno
            Descriptor.close(fd)
            if code == ENOENT || code == ECONNREFUSED || code == ENOTSOCK { throw .noSocketListener(path: path) }
            throw .system(call: "connect \(path)", errno: code, message: TransportError.message(for: code))
        }
        return UnixConnection(fd: fd, path: path, loop: .shared)
    }

    /// What has arrived, at most `maxBytes`; empty at end of stream. See `TCPConnection.read`.
    public func read(maxBytes: Int = 64 << 10, deadline: ContinuousClock.Instant? = nil) async throws -> [UInt8] {
        try await stream.read(maxBytes: maxBytes, deadline: deadline)
    }

    /// Sends `bytes`; returns once the kernel took them. See `TCPConnection.write`.
    public nonisolated(nonsending) func write(_ bytes: [UInt8], deadline: ContinuousClock.Instant? = nil) async throws {
        try await stream.write(bytes, deadline: deadline)
    }

    /// Closes the connection; idempotent.
    public func close() {
        stream.close()
    }
}

/// `sockaddr_un` for a path.
enum UnixAddress {
    /// The most bytes of a path (`sun_path` holds 108 with its terminating NUL).
    static let maxPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    static func withSockAddr<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) throws(TransportError) -> R {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count <= maxPathBytes else { throw .socketPathTooLong(path: path, limit: maxPathBytes) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
