import Glibc

/// Thin, checked wrappers over the socket system calls the module uses.
///
/// Every descriptor is created non-blocking and close-on-exec, so `parley lab`'s child
/// processes never inherit a node's sockets. Accepted descriptors get both flags by `fcntl`
/// right after `accept`: Glibc's module does not export `accept4` (no _GNU_SOURCE), which
/// leaves a tiny window in which a concurrent `fork` could inherit one.
enum Descriptor {
    /// A new non-blocking, close-on-exec socket.
    static func socket(family: Int32, type: __socket_type) throws(TransportError) -> Int32 {
        let flags = Int32(type.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = Glibc.socket(family, flags, 0)
        guard fd >= 0 else { throw .fromErrno(errno, call: "socket") }
        return fd
    }

    /// Makes an accepted descriptor non-blocking and close-on-exec.
    static func prepareAccepted(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    /// Sets an integer socket option.
    static func setOption(
        _ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32, call: String
    )
        throws(TransportError)
    {
        var value = value
        guard setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw .fromErrno(errno, call: "setsockopt(\(call))")
        }
    }

    /// The options every TCP connection gets: no Nagle delay (frames are small and latency
    /// matters) and keepalive probes after 60 s idle, every 10 s, 3 times — a backstop for the
    /// link's own ping (docs/DESIGN.md §4.2: ping 15 s, idle close 45 s). Best effort: an accepted socket
    /// that the peer already reset refuses options, and its first read reports that better.
    static func configureTCP(_ fd: Int32) {
        try? setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1, call: "TCP_NODELAY")
        try? setOption(fd, SOL_SOCKET, SO_KEEPALIVE, 1, call: "SO_KEEPALIVE")
        try? setOption(fd, Int32(IPPROTO_TCP), TCP_KEEPIDLE, 60, call: "TCP_KEEPIDLE")
        try? setOption(fd, Int32(IPPROTO_TCP), TCP_KEEPINTVL, 10, call: "TCP_KEEPINTVL")
        try? setOption(fd, Int32(IPPROTO_TCP), TCP_KEEPCNT, 3, call: "TCP_KEEPCNT")
    }

    /// Binds `fd` to `address`.
    static func bind(_ fd: Int32, to address: SocketAddress) throws(TransportError) {
        let status = address.withSockAddr { Glibc.bind(fd, $0, $1) }
        guard status == 0 else { throw .fromErrno(errno, call: "bind", address: address) }
    }

    /// The address the kernel bound `fd` to (the real port after binding port 0).
    static func localAddress(_ fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                getsockname(fd, address, &length) == 0 ? SocketAddress(address) : nil
            }
        }
    }

    /// The pending error of a socket (`SO_ERROR`), which also clears it.
    static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) == 0 else { return errno }
        return value
    }

    /// Closes `fd`. Linux releases the descriptor even when `close` reports EINTR, so it is
    /// never retried (a retry could close a descriptor another thread just opened).
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Arranges for `close` to send a reset (RST) instead of a graceful FIN: a dropped link.
    static func setResetOnClose(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    /// True for the errno values that mean "try again when the loop says the socket is ready".
    static func wouldBlock(_ code: Int32) -> Bool {
        code == EAGAIN || code == EWOULDBLOCK || code == EINPROGRESS
    }
}
