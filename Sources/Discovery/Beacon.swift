import Identity
import Sodium
import Wire

/// One UDP discovery beacon: "a node with this identity listens on TCP `tcpPort` at the address
/// this datagram came from" (docs/DESIGN.md §4.1).
///
/// Fixed 96 bytes, big-endian:
///
/// | off | len | field         | rule                                                              |
/// |----:|----:|---------------|-------------------------------------------------------------------|
/// |   0 |   4 | magic         | `PRLY` (0x50 0x52 0x4C 0x59)                                       |
/// |   4 |   1 | version       | 1                                                                 |
/// |   5 |   1 | flags         | bit 0 leaving; bits 1–7 MUST be 0 when sent, are ignored when read |
/// |   6 |   2 | tcp port      | where the sender accepts links; MUST NOT be 0                     |
/// |   8 |   8 | instance id   | random per process start (restart detection, self filter)        |
/// |  16 |  32 | identity      | the sender's Ed25519 public key (its `UserID`)                    |
/// |  48 |   8 | seq           | MUST increase with every beacon an instance sends; starts at 1    |
/// |  56 |   4 | interval (ms) | time until the sender's next beacon; MUST NOT be 0                |
/// |  60 |   4 | reserved      | MUST be 0 when sent, ignored when read (still covered by the MAC) |
/// |  64 |  32 | MAC           | `crypto_auth(bytes 0..<64, BeaconKey)` (HMAC-SHA-512-256)         |
///
/// There is no address inside: the receiver MUST use the datagram's source address (ZRE RFC 36;
/// putting it inside misled SSB, ssbc/ssb-server#640). The MAC only proves knowledge of the
/// network key — it keeps other deployments and garbage out. A beacon is not signed and is only
/// a dialing hint: the link handshake proves the identity, so a replayed or forged beacon costs
/// at most one failed, backed-off dial.
public struct Beacon: Sendable, Equatable {
    /// Bytes in every beacon.
    public static let byteCount = 96
    /// `PRLY`.
    public static let magic: [UInt8] = Array("PRLY".utf8)
    /// The version this code writes and reads.
    public static let version: UInt8 = 1
    static let macOffset = 64

    /// The sender is shutting down: forget it now rather than after three intervals.
    public var isLeaving: Bool
    public var tcpPort: UInt16
    public var instanceID: InstanceID
    public var identity: UserID
    public var seq: UInt64
    /// Milliseconds until the sender's next beacon; receivers expire it after three of these.
    public var interval: UInt32

    public init(
        isLeaving: Bool = false, tcpPort: UInt16, instanceID: InstanceID, identity: UserID,
        seq: UInt64, interval: UInt32
    ) {
        self.isLeaving = isLeaving
        self.tcpPort = tcpPort
        self.instanceID = instanceID
        self.identity = identity
        self.seq = seq
        self.interval = interval
    }

    /// The 96 bytes of this beacon, authenticated with `key`.
    public func encoded(key: BeaconKey) -> [UInt8] {
        precondition(tcpPort != 0 && interval != 0, "a beacon needs a TCP port and an interval")
        var writer = ByteWriter(capacity: Self.byteCount)
        writer.raw(Self.magic)
        writer.u8(Self.version)
        writer.u8(isLeaving ? 0x01 : 0x00)
        writer.u16(tcpPort)
        writer.u64(instanceID.raw)
        writer.bytes32(identity.raw)
        writer.u64(seq)
        writer.u32(interval)
        writer.u32(0)  // reserved
        writer.raw(Authenticator.tag(writer.bytes, key: key.bytes))
        return writer.bytes
    }

    /// Decodes and authenticates a received datagram.
    ///
    /// Checks run cheapest first, and each failure has its own error so `parley doctor` can tell
    /// "another protocol on this port" (`badMagic`) from "a newer Parley" (`unsupportedVersion`)
    /// from "a damaged datagram" (`wrongLength`) from "another deployment" (`badMAC`): magic (a
    /// datagram shorter than the magic is `wrongLength`), version, exact length, MAC (constant
    /// time), then field rules.
    public init(decoding bytes: [UInt8], key: BeaconKey) throws(BeaconError) {
        guard bytes.count >= 4 else { throw .wrongLength }
        guard bytes[0..<4].elementsEqual(Self.magic) else { throw .badMagic }
        guard bytes.count >= 5 else { throw .wrongLength }
        guard bytes[4] == Self.version else { throw .unsupportedVersion }
        guard bytes.count == Self.byteCount else { throw .wrongLength }
        let body = Array(bytes[0..<Self.macOffset])
        guard Authenticator.isValid(Array(bytes[Self.macOffset...]), for: body, key: key.bytes) else { throw .badMAC }
        var reader = ByteReader(body)
        do {
            _ = try reader.raw(5, "magic and version")
            isLeaving = try reader.u8("flags") & 0x01 != 0
            tcpPort = try reader.u16("tcp port")
            instanceID = InstanceID(raw: try reader.u64("instance id"))
            identity = UserID(try reader.bytes32("identity"))
            seq = try reader.u64("seq")
            interval = try reader.u32("interval")
        } catch {
            preconditionFailure("a 64-byte beacon body cannot be truncated: \(error)")
        }
        guard tcpPort != 0 else { throw .invalidPort }
        guard interval != 0 else { throw .invalidInterval }
    }
}

/// The random id of one run of a node: tells a restart (new id) from a replay (old id, old seq),
/// and the node's own beacons from another node with the same identity.
public struct InstanceID: Hashable, Sendable, CustomStringConvertible {
    public let raw: UInt64

    public init(raw: UInt64) { self.raw = raw }

    /// A fresh id from the CSPRNG; the shell calls this once per process start.
    public static func random() -> InstanceID {
        InstanceID(raw: Sodium.randomBytes(8).reduce(0) { $0 << 8 | UInt64($1) })
    }

    public var description: String { Sodium.hex((0..<8).map { UInt8(truncatingIfNeeded: raw >> (56 - 8 * $0)) }) }
}

/// The MAC key of beacons, derived from the network key so it differs from the handshake's key.
///
///     beaconKey = BLAKE2b-256("parley/beacon/v1", key: networkKey)
///
/// Nodes with different network keys (deployment secrets) MUST reject each other's beacons
/// (`BeaconError.badMAC`), exactly as their handshakes fail.
public struct BeaconKey: Sendable, Equatable, CustomStringConvertible {
    /// Hashed into the key; bump it to split beacon generations.
    public static let label = "parley/beacon/v1"

    let bytes: [UInt8]

    /// The beacon key of the network whose 32-byte key is `networkKey` (`NetworkKey.bytes`).
    public init(networkKey: [UInt8]) {
        precondition(networkKey.count == 32, "a network key is 32 bytes")
        bytes = GenericHash.hash(Array(Self.label.utf8), key: networkKey)
    }

    /// Redacted: with a deployment secret the key is itself a secret.
    public var description: String { "BeaconKey(redacted)" }
}

/// Why a received datagram is not a beacon this node accepts.
///
/// Counted per case in `DiscoveryDiagnostics.rejected`, with the last source, so `parley doctor`
/// can say why a peer is not seen. Beacons that are valid but ignored (our own, replays, rate
/// limited) are not errors; they have their own counters.
public enum BeaconError: Error, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Not 96 bytes (or shorter than the magic): damaged or cut in transit.
    case wrongLength
    /// Does not start with `PRLY`: another program uses the discovery port.
    case badMagic
    /// A Parley beacon of another version: a node of a newer (or older) release.
    case unsupportedVersion
    /// The MAC does not match: the sender uses another network key (deployment secret), or the
    /// beacon was changed in transit.
    case badMAC
    /// The TCP port is 0, which cannot be dialed.
    case invalidPort
    /// The announced interval is 0, which would expire the sender at once.
    case invalidInterval

    public var description: String {
        switch self {
        case .wrongLength: "a datagram of the wrong length (not a 96-byte beacon)"
        case .badMagic: "a datagram that is not a Parley beacon: another program uses the discovery port"
        case .unsupportedVersion: "a beacon of another Parley version: run the same release on every node"
        case .badMAC: "a beacon with the wrong network key: check that both nodes use the same --network-secret-file"
        case .invalidPort: "a beacon announcing TCP port 0"
        case .invalidInterval: "a beacon announcing a zero interval"
        }
    }
}
