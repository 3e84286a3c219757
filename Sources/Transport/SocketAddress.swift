import Glibc

/// A numeric IP address and port: where a socket is bound, or who is at the other end.
///
/// `host` is the numeric form (`127.0.0.1`, `::1`); IPv4 clients of a dual-stack `::` listener
/// show up as IPv4-mapped IPv6 (`::ffff:10.0.0.7`), exactly as the kernel reports them — use
/// `unmappedHost` to count connections per IP. `description` is `HOST:PORT`, with brackets
/// around IPv6 (`[::1]:7748`), the form `HostPort(parsing:)` reads back.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address family.
    public enum Family: Sendable, Hashable {
        case ipv4, ipv6
    }

    public let family: Family
    /// The numeric address, without brackets.
    public let host: String
    public let port: UInt16

    /// An address from a numeric IPv4 or IPv6 host; names are for `resolve(host:port:)`.
    public init(ipAddress host: String, port: UInt16) throws(TransportError) {
        if Self.ipv4(host) != nil {
            family = .ipv4
        } else if Self.ipv6(host) != nil {
            family = .ipv6
        } else {
            throw .invalidAddress(host)
        }
        self.host = host
        self.port = port
    }

    /// The address a kernel call filled in, or nil for a family other than IPv4/IPv6.
    init?(_ address: UnsafePointer<sockaddr>) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let v4 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self)
            guard let text = Self.text(v4.sin_addr) else { return nil }
            (family, host, port) = (.ipv4, text, UInt16(bigEndian: v4.sin_port))
        case AF_INET6:
            let v6 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self)
            guard let text = Self.text(v6.sin6_addr) else { return nil }
            (family, host, port) = (.ipv6, text, UInt16(bigEndian: v6.sin6_port))
        default:
            return nil
        }
    }

    public var description: String { Self.format(host: host, port: port) }

    /// `host` with an IPv4-mapped IPv6 prefix (`::ffff:`) removed: one key per client IP.
    public var unmappedHost: String {
        let prefix = "::ffff:"
        if family == .ipv6, host.lowercased().hasPrefix(prefix), Self.ipv4(String(host.dropFirst(prefix.count))) != nil {
            return String(host.dropFirst(prefix.count))
        }
        return host
    }

    /// `HOST:PORT`, bracketing IPv6 hosts.
    static func format(host: String, port: UInt16) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    var addressFamily: Int32 { family == .ipv4 ? AF_INET : AF_INET6 }

    /// Calls `body` with this address as a kernel `sockaddr` and its length.
    func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) rethrows -> R {
        switch family {
        case .ipv4:
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr = Self.ipv4(host)!  // validated by every initializer
            return try withUnsafePointer(to: &address) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    try body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .ipv6:
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_addr = Self.ipv6(host)!
            return try withUnsafePointer(to: &address) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    try body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
    }

    static func ipv4(_ text: String) -> in_addr? {
        var raw = in_addr()
        return inet_pton(AF_INET, text, &raw) == 1 ? raw : nil
    }

    static func ipv6(_ text: String) -> in6_addr? {
        var raw = in6_addr()
        return inet_pton(AF_INET6, text, &raw) == 1 ? raw : nil
    }

    /// The numeric text of an IPv4 address.
    static func text(_ address: in_addr) -> String? {
        withUnsafeBytes(of: address) { text(family: AF_INET, $0.baseAddress!, capacity: Int(INET_ADDRSTRLEN)) }
    }

    /// The numeric text of an IPv6 address.
    static func text(_ address: in6_addr) -> String? {
        withUnsafeBytes(of: address) { text(family: AF_INET6, $0.baseAddress!, capacity: Int(INET6_ADDRSTRLEN)) }
    }

    private static func text(family: Int32, _ raw: UnsafeRawPointer, capacity: Int) -> String? {
        var buffer = [CChar](repeating: 0, count: capacity)
        guard inet_ntop(family, raw, &buffer, socklen_t(capacity)) != nil else { return nil }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}

/// A `HOST:PORT` as a user writes it (`--listen`, the peers file): the host may be a name.
///
/// Accepted forms: `192.168.1.20:7748`, `[::1]:7748`, `localhost:7748`, `node7.lan:7748`, and a
/// bare host when `defaultPort` is given. A bare IPv6 address needs brackets only with a port.
public struct HostPort: Sendable, Hashable, CustomStringConvertible {
    public let host: String
    public let port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `text`; throws `.invalidAddress` naming the expected form.
    public init(parsing text: String, defaultPort: UInt16? = nil) throws(TransportError) {
        let trimmed = text.trimmingSpaces
        var host = trimmed
        var portText: Substring?
        if trimmed.hasPrefix("[") {
            guard let close = trimmed.firstIndex(of: "]") else { throw .invalidAddress(text) }
            host = trimmed[trimmed.index(after: trimmed.startIndex)..<close]
            let rest = trimmed[trimmed.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw .invalidAddress(text) }
                portText = rest.dropFirst()
            }
        } else if let colon = trimmed.lastIndex(of: ":"), trimmed.firstIndex(of: ":") == colon {
            host = trimmed[..<colon]
            portText = trimmed[trimmed.index(after: colon)...]
        }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "/" }) else { throw .invalidAddress(text) }
        if let portText {
            guard let port = UInt16(portText) else { throw .invalidAddress(text) }
            self.port = port
        } else if let defaultPort {
            self.port = defaultPort
        } else {
            throw .invalidAddress(text)
        }
        self.host = String(host)
    }

    public var description: String { SocketAddress.format(host: host, port: port) }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: Substring {
        let text = Substring(self)
        guard let first = text.firstIndex(where: { !$0.isWhitespace }),
            let last = text.lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return text[first...last]
    }
}
