import Dispatch
import Glibc

extension SocketAddress {
    /// The addresses for `host`, best first: numeric IPv4/IPv6 directly, `localhost` as
    /// 127.0.0.1 then ::1 (without asking the resolver), other names through `getaddrinfo`.
    ///
    /// `getaddrinfo` blocks (DNS, mDNS, /etc/hosts), so it runs on a Dispatch worker rather
    /// than on a thread of the cooperative pool, which must never block.
    public static func resolve(host: String, port: UInt16) async throws -> [SocketAddress] {
        if let addresses = resolveWithoutLookup(host: host, port: port) { return addresses }
        return try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<[SocketAddress], any Error>) in
            DispatchQueue.global().async {
                continuation.resume(with: Result { () throws(TransportError) in try lookUp(host: host, port: port) })
            }
        }
    }

    /// `resolve(host:port:)` on the calling thread; for binding at startup, where a short
    /// block is acceptable and the caller is not in an async context.
    static func resolveBlocking(host: String, port: UInt16) throws(TransportError) -> [SocketAddress] {
        if let addresses = resolveWithoutLookup(host: host, port: port) { return addresses }
        return try lookUp(host: host, port: port)
    }

    /// Numeric hosts and `localhost`; nil when the resolver must be asked.
    static func resolveWithoutLookup(host: String, port: UInt16) -> [SocketAddress]? {
        var bare = Substring(host)
        if bare.hasPrefix("["), bare.hasSuffix("]") { bare = bare.dropFirst().dropLast() }
        if let address = try? SocketAddress(ipAddress: String(bare), port: port) { return [address] }
        if bare.lowercased() == "localhost" {
            // Both are numeric, so neither initializer can throw.
            return [
                try! SocketAddress(ipAddress: "127.0.0.1", port: port),
                try! SocketAddress(ipAddress: "::1", port: port),
            ]
        }
        return nil
    }

    private static func lookUp(host: String, port: UInt16) throws(TransportError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)  // one entry per address, not per socket type
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else {
            let reason =
                status == EAI_SYSTEM ? TransportError.message(for: Glibc.errno) : String(cString: gai_strerror(status))
            throw .hostNotFound(host: host, reason: reason)
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var entry = list
        while let current = entry {
            if let sockaddr = current.pointee.ai_addr, let address = SocketAddress(sockaddr) {
                let withPort = try SocketAddress(ipAddress: address.host, port: port)
                if !addresses.contains(withPort) { addresses.append(withPort) }
            }
            entry = current.pointee.ai_next
        }
        guard !addresses.isEmpty else { throw .hostNotFound(host: host, reason: "no IPv4 or IPv6 address") }
        return addresses
    }
}
