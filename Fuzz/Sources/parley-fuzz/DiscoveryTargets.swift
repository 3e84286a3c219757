import Identity
import Sodium
import Wire

@testable import Discovery

let fuzzBeaconKey = BeaconKey(networkKey: [UInt8](repeating: 7, count: 32))

/// `beacon`: mode 0 decodes the input as a datagram; mode 1 builds a beacon from the input,
/// encodes it, flips at most one byte, and decodes: unchanged it MUST decode to itself, and
/// changed anywhere it MUST be refused (the MAC covers every byte).
func fuzzBeacon(_ bytes: [UInt8]) {
    var input = FuzzInput(bytes)
    switch input.byte() % 2 {
    case 0:
        let datagram = input.rest()
        if let beacon = try? Beacon(decoding: datagram, key: fuzzBeaconKey) {
            check(datagram.count == Beacon.byteCount, "a beacon of \(datagram.count) bytes decoded")
            check(beacon.tcpPort != 0 && beacon.interval != 0, "a beacon without port or interval decoded")
        }
    default:
        let fields = input.take(8 + 32 + 8 + 4 + 2 + 1)
        guard fields.count == 55 else { return }
        var reader = ByteReader(fields)
        guard let instance = try? reader.u64("instance"), let identity = try? reader.bytes32("identity"),
            let seq = try? reader.u64("seq"), let interval = try? reader.u32("interval"), let port = try? reader.u16("port"),
            let flags = try? reader.u8("flags"), port != 0, interval != 0
        else { return }
        let beacon = Beacon(
            isLeaving: flags & 1 != 0, tcpPort: port, instanceID: InstanceID(raw: instance), identity: UserID(identity), seq: seq,
            interval: interval)
        var datagram = beacon.encoded(key: fuzzBeaconKey)
        let position = Int(input.byte()) % (Beacon.byteCount + 1)
        let flip = input.byte()
        let changed = position < Beacon.byteCount && flip != 0
        if changed { datagram[position] ^= flip }
        let decoded = try? Beacon(decoding: datagram, key: fuzzBeaconKey)
        if changed {
            check(decoded == nil, "a beacon changed at byte \(position) still decoded")
        } else {
            check(decoded == beacon, "a beacon did not decode to itself")
        }
    }
}

/// `peers`: the static peers file parser; every peer it returns is a valid endpoint, at most
/// `maxLines` of them, none twice.
func fuzzPeersFile(_ bytes: [UInt8]) {
    guard let peers = try? PeersFile.parse(bytes) else { return }
    check(bytes.count <= PeersFile.maxBytes, "a peers file of \(bytes.count) bytes parsed")
    check(peers.count <= PeersFile.maxLines, "\(peers.count) peers parsed")
    check(Set(peers.map(\.endpoint)).count == peers.count, "an endpoint parsed twice")
    for peer in peers {
        check(peer.endpoint.port != 0, "a peer with port 0 parsed")
        check(PeerEndpoint.isValidHost(peer.endpoint.host), "an invalid host parsed: \(peer.endpoint.host)")
    }
}

/// `addresses`: the address list peers exchange; what decodes encodes back to the same bytes.
func fuzzPeerAddressList(_ bytes: [UInt8]) {
    guard let list = try? PeerAddressList.decode(bytes) else { return }
    check(list.count <= PeerAddressList.maxEntries, "\(list.count) addresses decoded")
    check(PeerAddressList.encode(list) == bytes, "an address list did not encode back to its bytes")
}
