/// A host and a port, as the shell's sockets report and use them: where a beacon came from, where
/// beacons go, where to dial a peer.
///
/// `host` is opaque to Discovery apart from validation and comparison: an IPv4 address, an IPv6
/// address *without* brackets (`::1`, `fe80::1%eth0`), or a host name from a peers file. The shell
/// MUST report source addresses in the same textual form it accepts for dialing, because
/// Discovery compares them as strings (to match a keyless static peer, to rate-limit a source).
public struct PeerEndpoint: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The longest host accepted (a DNS name is at most 253 characters).
    public static let maxHostLength = 253

    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// The same host with another port: a beacon's source address with its announced TCP port.
    public func with(port: UInt16) -> PeerEndpoint { PeerEndpoint(host: host, port: port) }

    /// `host:port`, or `[host]:port` for IPv6: the form of the peers file.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Whether `host` is a loopback address (127.0.0.0/8, `::1`, `localhost`): only processes on
    /// this machine can send from it.
    public var isLoopback: Bool {
        host.hasPrefix("127.") || host.hasPrefix("::ffff:127.") || host == "::1" || host == "localhost"
    }

    public static func < (a: PeerEndpoint, b: PeerEndpoint) -> Bool { (a.host, a.port) < (b.host, b.port) }
}

// MARK: - Parsing

extension PeerEndpoint {
    /// Parses `host:port` or `[ipv6]:port`; nil when the text is not one.
    public init?(parsing text: String) {
        guard case .success(let endpoint) = PeerEndpoint.parse(text) else { return nil }
        self = endpoint
    }

    /// Parses `host:port` or `[ipv6]:port`, or says what is wrong in words a person can act on.
    static func parse(_ text: String) -> Result<PeerEndpoint, EndpointSyntaxError> {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return .failure(.init("'[' without a closing ']'")) }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return .failure(.init("missing ':port' after ']'")) }
            portText = rest.dropFirst()
            guard isValidIPv6(host) else { return .failure(.init("'\(host)' is not an IPv6 address")) }
        } else {
            guard let colon = text.lastIndex(of: ":") else { return .failure(.init("missing ':port'")) }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") {
                return .failure(.init("an IPv6 address needs brackets, e.g. [::1]:7748"))
            }
            guard !host.isEmpty else { return .failure(.init("missing host before ':'")) }
            guard isValidName(host) else { return .failure(.init("'\(host)' is not a host name or IPv4 address")) }
        }
        guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let port = UInt16(portText), port != 0
        else { return .failure(.init("port '\(portText)' is not a number from 1 to 65535")) }
        return .success(PeerEndpoint(host: String(host), port: port))
    }

    /// Whether `host` is acceptable to dial: a host name, an IPv4 address, or a bare IPv6 address.
    static func isValidHost(_ host: some StringProtocol) -> Bool {
        host.contains(":") ? isValidIPv6(host) : isValidName(host)
    }

    /// Letters, digits, `-`, `_` and `.`: host names and IPv4 addresses (a loose check; the
    /// resolver is the judge, this only keeps junk and injection out).
    private static func isValidName(_ host: some StringProtocol) -> Bool {
        guard (1...maxHostLength).contains(host.utf8.count) else { return false }
        return host.utf8.allSatisfy { c in
            isASCIIAlphanumeric(c) || c == UInt8(ascii: "-") || c == UInt8(ascii: "_") || c == UInt8(ascii: ".")
        }
    }

    /// Hex digits, `:` and `.` (an embedded IPv4 tail), with an optional `%zone`.
    private static func isValidIPv6(_ host: some StringProtocol) -> Bool {
        guard (2...maxHostLength).contains(host.utf8.count) else { return false }
        let parts = host.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
        let address = parts[0]
        guard address.contains(":"),
            address.utf8.allSatisfy({ c in
                isASCIIHexDigit(c) || c == UInt8(ascii: ":") || c == UInt8(ascii: ".")
            })
        else { return false }
        guard parts.count == 2 else { return true }
        return isValidName(parts[1])  // an interface name or index
    }

    private static func isASCIIAlphanumeric(_ c: UInt8) -> Bool {
        (0x30...0x39).contains(c) || (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c)
    }

    private static func isASCIIHexDigit(_ c: UInt8) -> Bool {
        (0x30...0x39).contains(c) || (0x41...0x46).contains(c) || (0x61...0x66).contains(c)
    }
}

/// Why a `host:port` text is not an endpoint (in words for a person).
struct EndpointSyntaxError: Error, Equatable {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}
