import Identity

/// The static peers file (`parley run --peers FILE`), for networks where beacons do not reach:
/// other subnets, VLANs, client-isolated Wi-Fi, Docker bridges. `Peers.example` at the top of the
/// repository is the documented example.
///
/// Format, one entry per line:
///
///     host:port [key]
///
/// - `host` is a host name, an IPv4 address, or an IPv6 address in brackets (`[::1]:7748`,
///   `[fe80::1%eth0]:7748`); `port` is the peer's TCP port, 1–65535.
/// - `key` (optional) is the peer's user id as `parley whoami` prints it (52 base32 characters).
///   With a key, the handshake checks that the listener is that identity. Without one the key
///   must be learned first (from that host's beacon, see `DiscoveryDirective.connect`).
/// - `#` starts a comment that runs to the end of the line; blank lines are ignored; fields are
///   separated by spaces or tabs; CRLF line ends are accepted.
/// - At most `maxLines` lines and `maxBytes` bytes. An endpoint MUST NOT appear twice.
///
/// Every problem is reported with its 1-based line number, so a person can fix the file.
public enum PeersFile {
    /// Lines in a file (comments and blank lines included).
    public static let maxLines = 1_024
    /// Bytes in a file.
    public static let maxBytes = 64 * 1_024

    /// Parses the bytes of a peers file.
    public static func parse(_ bytes: [UInt8]) throws(PeersFileError) -> [StaticPeer] {
        guard bytes.count <= maxBytes else { throw .tooLarge(bytes: bytes.count, limit: maxBytes) }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .notUTF8 }
        return try parse(text)
    }

    /// Parses the text of a peers file.
    public static func parse(_ text: String) throws(PeersFileError) -> [StaticPeer] {
        guard text.utf8.count <= maxBytes else { throw .tooLarge(bytes: text.utf8.count, limit: maxBytes) }
        // "\r\n" is one Character in Swift, so it is a separator of its own.
        var lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        if lines.last?.isEmpty == true { lines.removeLast() }  // the newline ending the last line
        guard lines.count <= maxLines else { throw .tooManyLines(limit: maxLines) }
        var peers: [StaticPeer] = []
        var firstLine: [PeerEndpoint: Int] = [:]
        for (index, rawLine) in lines.enumerated() {
            let number = index + 1
            guard let peer = try parseLine(rawLine, number: number) else { continue }
            if let earlier = firstLine[peer.endpoint] {
                throw .badLine(line: number, reason: "\(peer.endpoint) is already listed on line \(earlier)")
            }
            firstLine[peer.endpoint] = number
            peers.append(peer)
        }
        return peers
    }

    /// One line: nil for a blank or comment line.
    private static func parseLine(_ rawLine: Substring, number: Int) throws(PeersFileError) -> StaticPeer? {
        var line = rawLine
        if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
        let fields = line.split { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard !fields.isEmpty else { return nil }
        guard fields.count <= 2 else {
            throw .badLine(line: number, reason: "expected 'host:port [key]', found \(fields.count) fields")
        }
        let endpoint: PeerEndpoint
        switch PeerEndpoint.parse(String(fields[0])) {
        case .success(let parsed): endpoint = parsed
        case .failure(let error): throw .badLine(line: number, reason: error.reason)
        }
        guard fields.count == 2 else { return StaticPeer(endpoint: endpoint) }
        guard let key = UserID(text: String(fields[1])) else {
            throw .badLine(
                line: number,
                reason: "'\(fields[1])' is not a user id (52 base32 characters, as 'parley whoami' prints it)")
        }
        return StaticPeer(endpoint: endpoint, key: key)
    }
}

/// Why a peers file cannot be used. The descriptions name the problem and the fix.
public enum PeersFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Larger than `PeersFile.maxBytes`.
    case tooLarge(bytes: Int, limit: Int)
    /// More than `PeersFile.maxLines` lines.
    case tooManyLines(limit: Int)
    /// Not UTF-8 text.
    case notUTF8
    /// Line `line` (1-based) is not `host:port [key]`; `reason` says what is wrong.
    case badLine(line: Int, reason: String)

    public var description: String {
        switch self {
        case .tooLarge(let bytes, let limit): "the peers file has \(bytes) bytes, over the limit of \(limit): list fewer peers"
        case .tooManyLines(let limit): "the peers file has more than \(limit) lines: list fewer peers"
        case .notUTF8: "the peers file is not UTF-8 text: save it as plain text"
        case .badLine(let line, let reason): "peers file line \(line): \(reason) (expected 'host:port [key]')"
        }
    }
}
