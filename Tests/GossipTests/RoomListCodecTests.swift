import Gossip
import Replica
import Testing
import Wire

/// ROOMS (0x13), the room directory's message: its limits are checked before anything is
/// allocated, and anything malformed is refused.
@Suite struct RoomListCodecTests {
    func listing(_ name: String, _ topic: String = "", people: UInt32 = 1) -> RoomListing {
        RoomListing(name: RoomName(name)!, topic: topic, people: people)
    }

    @Test func aList_roundTrips() throws {
        let rooms = [listing("lobby", "welcome", people: 12), listing("dev"), listing(String(repeating: "x", count: 64), String(repeating: "t", count: 256))]
        #expect(try RoomListMessage.rooms(fromBody: RoomListMessage.body(rooms)) == rooms)
        #expect(try RoomListMessage.rooms(fromBody: RoomListMessage.body([])) == [])
    }

    @Test func theSender_listsAtMostTheLimit() throws {
        let many = (0..<300).map { listing("room-\($0)") }
        #expect(try RoomListMessage.rooms(fromBody: RoomListMessage.body(many)).count == RoomListMessage.maxRooms)
    }

    @Test func malformedLists_areRefused() {
        func entry(_ name: [UInt8], _ topic: [UInt8] = [], people: UInt32 = 1) -> [UInt8] {
            var w = ByteWriter()
            w.u8(UInt8(name.count)); w.raw(name); w.blob16(topic); w.u32(people)
            return w.bytes
        }
        func body(_ count: UInt16, _ entries: [[UInt8]]) -> [UInt8] {
            var w = ByteWriter()
            w.u16(count)
            for e in entries { w.raw(e) }
            return w.bytes
        }
        let cases: [(String, [UInt8])] = [
            ("a count over the limit", body(257, [])),
            ("a count the body cannot hold", body(200, [entry(Array("a".utf8))])),
            ("an empty name", body(1, [entry([])])),
            ("a name that is not normalized", body(1, [entry(Array("Lobby".utf8))])),
            ("a name with '#'", body(1, [entry(Array("#lobby".utf8))])),
            ("a name that is not UTF-8", body(1, [entry([0xFF, 0xFE])])),
            ("a name listed twice", body(2, [entry(Array("a".utf8)), entry(Array("a".utf8))])),
            ("a topic over 256 bytes", body(1, [entry(Array("a".utf8), Array(repeating: 0x61, count: 257))])),
            ("a topic with a control character", body(1, [entry(Array("a".utf8), [0x1B, 0x5B])])),
            ("trailing bytes", body(1, [entry(Array("a".utf8))]) + [0]),
            ("a truncated entry", Array(body(1, [entry(Array("a".utf8))]).dropLast())),
        ]
        for (what, bytes) in cases {
            #expect(throws: WireDecodingError.self, "\(what)") { try RoomListMessage.rooms(fromBody: bytes) }
        }
    }

    @Test func roomsIsTheShellsType_notTheSessions() {
        #expect(SyncMessageType.rooms.rawValue == 0x13 && SyncMessageType.rooms.isReserved)
    }
}
