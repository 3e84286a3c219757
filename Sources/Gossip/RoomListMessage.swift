import Replica
import Wire

/// One public room in a ROOMS message: its name, its topic and how many people the sender
/// counts in it (the authors of its chains, and the sender's user if it joined without writing).
public struct RoomListing: Hashable, Sendable {
    public var name: RoomName
    public var topic: String
    public var people: UInt32

    public init(name: RoomName, topic: String, people: UInt32) {
        (self.name, self.topic, self.people) = (name, topic, people)
    }
}

/// ROOMS (0x13): "these are the public rooms I have joined" — the room directory's one message,
/// the shell's (never stored or forwarded). A node sends it when a link is ready and when its
/// list changes, only to a peer whose `SyncHello` announced `SyncHello.roomDirectory`.
///
/// Body: `count u16` (≤ 256) ‖ count × (`name length u8` (1…64) ‖ name ‖ `topic length u16`
/// (≤ 256) ‖ topic ‖ `people u32`). A name must be a normalized room name (`RoomName`) and a
/// topic a valid policy topic; names are unique in one message. Anything else is malformed.
/// Nothing in it is checked against ops: a peer can name any room, topic or count, never its
/// content (joining fetches the room's own signed ops).
public enum RoomListMessage {
    public static let type = SyncMessageType.rooms.rawValue
    /// Rooms in one message; a node that joined more lists the first ones by name.
    public static let maxRooms = 256

    /// The frame body listing `rooms` (the first `maxRooms`).
    public static func body(_ rooms: [RoomListing]) -> [UInt8] {
        let listed = rooms.prefix(maxRooms)
        var w = ByteWriter(capacity: 2 + listed.count * 16)
        w.u16(UInt16(listed.count))
        for room in listed {
            let name = Array(room.name.value.utf8)
            w.u8(UInt8(name.count))
            w.raw(name)
            w.string16(String(decoding: room.topic.utf8.prefix(RoomPolicy.maxTopicBytes), as: UTF8.self))
            w.u32(room.people)
        }
        return w.bytes
    }

    /// The rooms a ROOMS body lists; throws for anything malformed (counts are checked before
    /// anything is allocated).
    public static func rooms(fromBody body: [UInt8]) throws(WireDecodingError) -> [RoomListing] {
        var r = ByteReader(body)
        let count = Int(try r.u16("room count"))
        guard count <= maxRooms else { throw .tooLong(field: "rooms", length: count, limit: maxRooms) }
        // The smallest entry is 1 + 1 + 2 + 4 bytes: a count the body cannot hold is refused first.
        guard count * 8 <= r.remaining else { throw .truncated(field: "rooms") }
        var rooms: [RoomListing] = []
        rooms.reserveCapacity(count)
        var names: Set<String> = []
        for _ in 0..<count {
            let length = Int(try r.u8("room name length"))
            guard (1...RoomName.maxBytes).contains(length) else { throw .tooLong(field: "room name", length: length, limit: RoomName.maxBytes) }
            let raw = try r.raw(length, "room name")
            guard let text = String(validating: raw, as: UTF8.self) else { throw .invalidUTF8(field: "room name") }
            guard let name = RoomName(text), name.value == text else { throw .invalidValue(field: "room name is not a normalized room name") }
            guard names.insert(text).inserted else { throw .invalidValue(field: "room name listed twice") }
            let topic = try r.string16("room topic", limit: RoomPolicy.maxTopicBytes)
            guard RoomPolicy(topic: topic).problem == nil else { throw .invalidValue(field: "room topic") }
            rooms.append(RoomListing(name: name, topic: topic, people: try r.u32("room people")))
        }
        try r.expectEnd()
        return rooms
    }
}
