import Identity
import Replica
import Store
import TestSupport
import Testing

import struct Replica.Operation

/// An op stamped too far ahead of a replica's clock waits there until the clock is near it
/// (`HybridClock.maxLeadMillis`): no stamp pins itself below every later message, hides unread
/// messages from whoever marks the room read, or pulls the replica's clock forward.
@Suite struct StampAheadTests {
    let alice = Fixtures.identity(0)
    let bob = Fixtures.identity(1)
    let mallory = Fixtures.identity(3)
    let lobby = PartitionDescriptor.room(RoomName("lobby")!)
    /// 2100-01-01, in Unix milliseconds.
    let year2100: UInt64 = 4_102_444_800_000

    @Test func anOpFromTheYear2100_waits_andTakesNoPlaceNoMarkerAndNoClock() throws {
        let now = Fixtures.now()
        var factory = OpFactory()
        let bomb = factory.make(post("first forever"), in: lobby.id, by: mallory, hlcOffset: Int64(year2100 - now))
        let store = try Fixtures.store(partitions: [lobby, .ownData(owner: bob.id)])
        #expect(try store.apply(bomb, nowMillis: now) == .rejected(.rule(.stampedAhead)))
        #expect(try store.apply([bomb], nowMillis: now) == [.rejected(.rule(.stampedAhead))])
        #expect(try store.log.opCount(lobby.id) == 0)
        #expect(store.clock.last.wallMillis <= now + HybridClock.maxDriftMillis)

        // Bob reads the room, then alice writes: the message is unread, and it is the newest.
        _ = try store.author(post("hello"), in: lobby.id, by: alice, nowMillis: now)
        let newest = try #require(try store.views.newestMessageHLC(lobby.id))
        _ = try store.author(
            .readMarker(partition: lobby.id, position: newest), in: PartitionDescriptor.ownData(owner: bob.id).id, by: bob, nowMillis: now + 1)
        _ = try store.author(post("are you there?"), in: lobby.id, by: alice, nowMillis: now + 2)
        #expect(try store.views.unreadCount(lobby.id, reader: bob.id) == 1)
        #expect(try store.views.history(lobby.id).map(\.text) == ["hello", "are you there?"])
    }

    @Test func anOpAhead_isAppliedOnceTheClockIsNearIt_andTheChainAfterItWaitsWithIt() throws {
        let now = Fixtures.now()
        let lead = HybridClock.maxLeadMillis + 60_000
        var factory = OpFactory()
        let first = factory.make(post("on time"), in: lobby.id, by: bob)
        let ahead = factory.make(post("ahead"), in: lobby.id, by: bob, hlcOffset: Int64(lead))
        let after = factory.make(post("after"), in: lobby.id, by: bob, hlcOffset: Int64(lead))
        let store = try Fixtures.store(partitions: [lobby])
        let waiting = ApplyOutcome.rejected(.rule(.stampedAhead))
        #expect(try store.apply([first, ahead, after], nowMillis: now) == [.applied, waiting, waiting])
        #expect(RuleViolation.stampedAhead.mayResolveLater)
        // A minute later both are within the lead: clocks a minute or two apart exchange ops at once.
        #expect(try store.apply([ahead, after], nowMillis: now + 60_000 + 1_000) == [.applied, .applied])
        #expect(try store.views.history(lobby.id).map(\.text) == ["on time", "ahead", "after"])
    }
}
