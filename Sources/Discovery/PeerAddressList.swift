import Identity
import Wire

/// The address list linked peers exchange (`Discovery.shareableAddresses` → bytes → the peer's
/// `Discovery.onPeerAddresses`): the payload of one link message, bounded in count and size.
///
/// Big-endian:
///
/// | off | len | field   | rule                                             |
/// |----:|----:|---------|--------------------------------------------------|
/// |   0 |   1 | version | 1                                                |
/// |   1 |   1 | count   | 0...64 (`maxEntries`)                            |
/// |   2 |     | entries | `count` times:                                   |
/// |     |  32 | peer    | the user id (Ed25519 public key)                 |
/// |     |   2 | port    | TCP port, MUST NOT be 0                          |
/// |     |   1 | n       | host length, 1...253                             |
/// |     |   n | host    | ASCII host name, IPv4, or IPv6 without brackets |
///
/// Nothing in the list is trusted: an entry is a hint to dial, and the handshake proves (or
/// refutes) the identity at that address.
public enum PeerAddressList {
    public static let version: UInt8 = 1
    /// Entries in one list.
    public static let maxEntries = 64
    /// The largest encoded list (64 entries with 253-byte hosts).
    public static let maxBytes = 2 + maxEntries * (32 + 2 + 1 + PeerEndpoint.maxHostLength)

    /// Encodes `addresses`. The caller MUST keep within `maxEntries` and valid hosts, as
    /// `Discovery.shareableAddresses` does.
    public static func encode(_ addresses: [PeerAddress]) -> [UInt8] {
        precondition(addresses.count <= maxEntries, "at most \(maxEntries) addresses per list")
        var writer = ByteWriter(capacity: 2 + addresses.count * 48)
        writer.u8(version)
        writer.u8(UInt8(addresses.count))
        for entry in addresses {
            let host = Array(entry.endpoint.host.utf8)
            precondition(
                PeerEndpoint.isValidHost(entry.endpoint.host) && entry.endpoint.port != 0,
                "invalid endpoint \(entry.endpoint)")
            writer.bytes32(entry.peer.raw)
            writer.u16(entry.endpoint.port)
            writer.u8(UInt8(host.count))
            writer.raw(host)
        }
        return writer.bytes
    }

    /// Decodes a list received from a peer; throws on anything malformed, oversized or trailing.
    public static func decode(_ bytes: [UInt8]) throws(WireDecodingError) -> [PeerAddress] {
        guard bytes.count <= maxBytes else { throw .tooLong(field: "address list", length: bytes.count, limit: maxBytes) }
        var reader = ByteReader(bytes)
        guard try reader.u8("version") == version else { throw .invalidValue(field: "version") }
        let count = Int(try reader.u8("count"))
        guard count <= maxEntries else { throw .tooLong(field: "count", length: count, limit: maxEntries) }
        var addresses: [PeerAddress] = []
        addresses.reserveCapacity(count)
        for _ in 0..<count {
            let peer = UserID(try reader.bytes32("peer"))
            let port = try reader.u16("port")
            guard port != 0 else { throw .invalidValue(field: "port") }
            let length = Int(try reader.u8("host length"))
            guard length <= PeerEndpoint.maxHostLength else {
                throw .tooLong(field: "host", length: length, limit: PeerEndpoint.maxHostLength)
            }
            let raw = try reader.raw(length, "host")
            guard let host = String(validating: raw, as: UTF8.self) else { throw .invalidUTF8(field: "host") }
            guard PeerEndpoint.isValidHost(host) else { throw .invalidValue(field: "host") }
            addresses.append(PeerAddress(peer: peer, endpoint: PeerEndpoint(host: host, port: port)))
        }
        try reader.expectEnd()
        return addresses
    }
}
