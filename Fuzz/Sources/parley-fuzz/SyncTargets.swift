import Gossip
import LinkProtocol

/// `sync`: every sync message type, and the room directory's ROOMS. What decodes re-encodes to a message that decodes to the
/// same value (an OPS batch of the size `encodedSize` says), within the frame limit.
func fuzzSyncMessage(_ bytes: [UInt8]) {
    if bytes.first == RoomListMessage.type, let rooms = try? RoomListMessage.rooms(fromBody: Array(bytes.dropFirst())) {
        check(rooms.count <= RoomListMessage.maxRooms, "a ROOMS message of \(rooms.count) rooms decoded")
        check((try? RoomListMessage.rooms(fromBody: RoomListMessage.body(rooms))) == rooms, "a ROOMS message did not decode to itself after encoding")
    }
    guard let message = try? SyncMessage.decode(bytes) else { return }
    check(bytes.count <= SyncMessage.maxBytes, "a sync message of \(bytes.count) bytes decoded")
    let encoded = message.encode()
    if case .ops(let batch) = message {
        check(encoded.count == batch.encodedSize, "encodedSize \(batch.encodedSize) but \(encoded.count) bytes encoded")
    }
    check((try? SyncMessage.decode(encoded)) == message, "a sync message did not decode to itself after encoding")
}

/// `link`: the link layer's messages (HELLO, PING, PONG, BYE, ADDRESSES; the rest pass through
/// as sync frames). What decodes re-encodes to a message that decodes to the same value.
func fuzzLinkMessage(_ bytes: [UInt8]) {
    guard let message = try? LinkMessage(decoding: bytes) else { return }
    check((try? LinkMessage(decoding: message.encoded)) == message, "a link message did not decode to itself after encoding")
    if case .hello(let hello) = message {
        check((hello.nick?.utf8.count ?? 0) <= LinkHello.maxNickBytes, "a nick over the limit decoded")
    }
}
