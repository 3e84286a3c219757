import Glibc

/// Every failure of the socket layer, with the errno behind it and a message that names the fix.
///
/// Match cases in `catch` (`catch TransportError.closed`); `errno` gives the system code when
/// there is one; `description` is one line fit for a user (docs/DESIGN.md §6.1: errors name the problem
/// and the fix). A cancelled task gets `CancellationError` instead, as Swift code expects.
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `bind` found the port taken (`EADDRINUSE`), usually by another node on this host.
    case addressInUse(host: String, port: UInt16)
    /// `bind` to an address that is not one of this machine's (`EADDRNOTAVAIL`).
    case addressNotAvailable(host: String, port: UInt16)
    /// The kernel refused: a port below 1024 without privileges, or broadcast without
    /// `SO_BROADCAST` (`EACCES`, `EPERM`).
    case permissionDenied(operation: String, errno: Int32)
    /// Nothing listens at the address (`ECONNREFUSED`).
    case connectionRefused(host: String, port: UInt16)
    /// The peer or the network dropped the connection (`ECONNRESET`, `EPIPE`), or a
    /// `FaultInjection.dropAfterBytes` fired.
    case connectionReset(peer: String)
    /// No route to the host (`ENETUNREACH`, `EHOSTUNREACH`, `ENETDOWN`).
    case unreachable(host: String, port: UInt16, errno: Int32)
    /// A deadline passed; `operation` says which ("connect to 10.0.0.7:7748", "read from …").
    /// A write or flush that times out also closes its connection (a half-sent write cannot be
    /// withdrawn).
    case timedOut(operation: String)
    /// This side closed the socket (or shut down writing) before or during the operation.
    case closed
    /// The peer ended the stream before `readExactly` had all its bytes.
    case endOfStream(expected: Int, received: Int)
    /// Name resolution found no address for `host`.
    case hostNotFound(host: String, reason: String)
    /// A `host:port` string or numeric address that does not parse.
    case invalidAddress(String)
    /// `enqueue` would take the connection's send buffer past `limit` bytes: the peer is slow.
    case sendBufferFull(limit: Int)
    /// A datagram longer than `UDPSocket.maxDatagramSize`, which receivers would drop.
    case datagramTooLarge(size: Int, limit: Int)
    /// A Unix domain socket path longer than the kernel's `sun_path` (`limit` bytes).
    case socketPathTooLong(path: String, limit: Int)
    /// No process listens on the Unix domain socket at `path`: the file is missing, or it is a
    /// stale socket left by a process that died (`ENOENT`, `ECONNREFUSED`).
    case noSocketListener(path: String)
    /// Any other failed system call.
    case system(call: String, errno: Int32, message: String)

    /// The system error code behind this error, when there is one.
    public var errno: Int32? {
        switch self {
        case .addressInUse: EADDRINUSE
        case .addressNotAvailable: EADDRNOTAVAIL
        case .permissionDenied(_, let code), .unreachable(_, _, let code), .system(_, let code, _): code
        case .connectionRefused: ECONNREFUSED
        case .connectionReset: ECONNRESET
        case .timedOut: ETIMEDOUT
        case .noSocketListener: ECONNREFUSED
        case .closed, .endOfStream, .hostNotFound, .invalidAddress, .sendBufferFull, .datagramTooLarge,
            .socketPathTooLong:
            nil
        }
    }

    public var description: String {
        switch self {
        case .addressInUse(let host, let port):
            "port \(port) on \(host) is already in use (another parley node?); stop that process, or "
                + "pick another port: --listen \(host):PORT for links, --discovery-port N for discovery"
        case .addressNotAvailable(let host, let port):
            "\(host) is not an address of this machine, so port \(port) cannot be bound there; "
                + "use 0.0.0.0 (every interface) or an address that `parley doctor` lists"
        case .permissionDenied(let operation, let code) where operation.hasPrefix("bind"):
            "\(operation) was refused (\(Self.message(for: code))); use a port of 1024 or above"
        case .permissionDenied(let operation, let code):
            "\(operation) was refused (\(Self.message(for: code))); sending to a broadcast address "
                + "needs a socket with broadcast enabled (UDPSocket(broadcast: true))"
        case .connectionRefused(let host, let port):
            "nothing listens at \(SocketAddress.format(host: host, port: port)); check that the "
                + "peer's node is running and that the port is right"
        case .connectionReset(let peer):
            "the connection to \(peer) was dropped by the peer or the network; redial it"
        case .unreachable(let host, let port, let code):
            "\(SocketAddress.format(host: host, port: port)) is unreachable "
                + "(\(Self.message(for: code))); check the network link and the address"
        case .timedOut(let operation):
            "\(operation) timed out; check that the peer is up and reachable"
        case .closed:
            "the socket was already closed by this node"
        case .endOfStream(let expected, let received):
            "the peer closed the connection after \(received) of \(expected) expected bytes"
        case .hostNotFound(let host, let reason):
            "cannot resolve host \"\(host)\" (\(reason)); check the spelling, or use a numeric address"
        case .invalidAddress(let text):
            "\"\(text)\" is not a valid address; write HOST:PORT, e.g. 192.168.1.20:7748 or [::1]:7748"
        case .sendBufferFull(let limit):
            "the peer reads too slowly: more than \(limit) bytes are waiting to be sent to it"
        case .datagramTooLarge(let size, let limit):
            "a \(size)-byte datagram exceeds the \(limit)-byte limit; send smaller datagrams"
        case .socketPathTooLong(let path, let limit):
            "the socket path \(path) is longer than \(limit) bytes; use a shorter directory"
        case .noSocketListener(let path):
            "nothing listens on \(path) (no process, or a stale socket file left by one that died)"
        case .system(let call, let code, let message):
            "\(call) failed: \(message) (errno \(code))"
        }
    }

    /// The error for a failed `call` whose errno is `code`, naming `address` where it matters.
    static func fromErrno(_ code: Int32, call: String, address: SocketAddress? = nil) -> TransportError {
        let host = address?.host ?? "?"
        let port = address?.port ?? 0
        let target = address.map { " \($0)" } ?? ""
        switch code {
        case EADDRINUSE: return .addressInUse(host: host, port: port)
        case EADDRNOTAVAIL: return .addressNotAvailable(host: host, port: port)
        case EACCES, EPERM: return .permissionDenied(operation: call + target, errno: code)
        case ECONNREFUSED: return .connectionRefused(host: host, port: port)
        case ECONNRESET, EPIPE, ECONNABORTED: return .connectionReset(peer: address?.description ?? "?")
        case ENETUNREACH, EHOSTUNREACH, ENETDOWN: return .unreachable(host: host, port: port, errno: code)
        case ETIMEDOUT: return .timedOut(operation: call + target)
        default: return .system(call: call, errno: code, message: message(for: code))
        }
    }

    /// `strerror_r`'s text for `code` (the XSI variant: Glibc's module has no _GNU_SOURCE).
    static func message(for code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard strerror_r(code, &buffer, buffer.count) == 0 else { return "error \(code)" }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Out of descriptors or kernel memory: transient, worth retrying after a pause.
    var isResourceExhaustion: Bool {
        if case .system(_, let code, _) = self { return [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(code) }
        return false
    }
}
