import Identity
import Replica
import TestSupport
import Testing
import Wire

/// Room policies (docs/DESIGN.md §3.4, *Room policies*): the body's limits, and the owner rule.
@Suite struct RoomPolicyTests {
    let alice = Fixtures.identity(0).id
    let bob = Fixtures.identity(1).id

    func event(_ author: UserID, _ ms: UInt64, seq: UInt64, topic: String) -> RoomPolicyState.Event {
        RoomPolicyState.Event(author: author, hlc: HLC(wallMillis: ms, counter: 0), seq: seq, policy: RoomPolicy(topic: topic))
    }

    @Test func aPolicyBody_roundTrips() throws {
        for policy in [
            RoomPolicy(), RoomPolicy(topic: "on-call", retention: .days(30), historyForNewJoiners: false),
            RoomPolicy(topic: String(repeating: "é", count: 128), retention: .lastMessages(Retention.maxMessages)),
        ] {
            let body = OperationBody.roomPolicy(policy)
            #expect(body.validate() == nil)
            #expect(try OperationBody(type: OperationType.roomPolicy.rawValue, decoding: body.encoded) == body)
        }
    }

    @Test func aPolicyBody_breakingALimit_isRefused() {
        let tooLong = RoomPolicy(topic: String(repeating: "x", count: RoomPolicy.maxTopicBytes + 1))
        #expect(OperationBody.roomPolicy(tooLong).validate() != nil)
        #expect(throws: WireDecodingError.self) { try OperationBody(type: 0x14, decoding: OperationBody.roomPolicy(tooLong).encoded) }
        for bad in [
            RoomPolicy(topic: "two\nlines"), RoomPolicy(topic: "\u{1B}[2J"), RoomPolicy(retention: .days(0)),
            RoomPolicy(retention: .days(Retention.maxDays + 1)), RoomPolicy(retention: .lastMessages(0)),
        ] {
            #expect(OperationBody.roomPolicy(bad).validate() != nil, "\(bad)")
            #expect(throws: WireDecodingError.self) { try OperationBody(type: 0x14, decoding: OperationBody.roomPolicy(bad).encoded) }
        }
        // An unknown retention kind, a history byte other than 0/1, trailing bytes.
        var w = ByteWriter()
        w.string16("t"); w.u8(3); w.u32(1); w.u8(1)
        #expect(throws: WireDecodingError.self) { try OperationBody(type: 0x14, decoding: w.bytes) }
        let good = OperationBody.roomPolicy(RoomPolicy()).encoded
        #expect(throws: WireDecodingError.self) { try OperationBody(type: 0x14, decoding: Array(good.dropLast()) + [2]) }
        #expect(throws: WireDecodingError.self) { try OperationBody(type: 0x14, decoding: good + [0]) }
    }

    @Test func retentionText_parsesItsBounds() {
        #expect(Retention(text: "all") == .all && Retention(text: "30d") == .days(30) && Retention(text: "500M") == .lastMessages(500))
        for bad in ["", "d", "0d", "-1d", "36501d", "1000001m", "5w", "30 d", "1.5d"] { #expect(Retention(text: bad) == nil, "\(bad)") }
    }

    @Test func theOwner_isTheFirstPolicyAuthorByClock_inAnyOrder_andOnlyTheirLatestCounts() throws {
        let events = [
            event(alice, 10, seq: 1, topic: "first"),
            event(bob, 20, seq: 1, topic: "bob tries"),
            event(alice, 30, seq: 4, topic: "alice again"),
            event(bob, 40, seq: 2, topic: "bob again"),
        ]
        for order in [events, events.reversed(), [events[3], events[0], events[2], events[1]]] {
            let state = try #require(RoomPolicyState.resolve(order))
            #expect(state.owner == alice && state.policy.topic == "alice again")
        }
        #expect(RoomPolicyState.resolve([]) == nil)
        // A backdated first op takes the room: the rule cannot tell it from an honest one.
        let state = try #require(RoomPolicyState.resolve(events + [event(bob, 5, seq: 3, topic: "backdated")]))
        #expect(state.owner == bob && state.policy.topic == "backdated")
    }

    @Test func onlyRooms_acceptPolicyOps() {
        #expect(PartitionRules.allows(.roomPolicy, in: .room))
        for kind in [PartitionKind.conversation, .directory, .inbox, .ownData] { #expect(!PartitionRules.allows(.roomPolicy, in: kind)) }
    }
}
