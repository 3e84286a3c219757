import Identity
import Replica
import Store
import TestSupport
import Testing

/// Unread counts (what `parley rooms` shows) with two identities sharing one store: computed
/// locally from read markers, never replicated as counters (docs/DESIGN.md §3.4).
@Suite(.onCommandThreads) struct UnreadCountTests {
    @Test func othersMessages_areUnreadUntilTheReadMarkerPassesThem() throws {
        let alice = Fixtures.identity(0), bob = Fixtures.identity(1)
        let lobby = PartitionDescriptor.room(RoomName("lobby")!)
        let store = try Fixtures.store(partitions: [lobby, .ownData(owner: alice.id), .ownData(owner: bob.id)])
        func post(_ text: String, by author: Identity, at offset: UInt64) throws {
            try store.author(.post(text: text, attachments: [], location: nil, replyTo: nil), in: lobby.id, by: author, nowMillis: Fixtures.now(offset))
        }
        try post("hi", by: alice, at: 1)
        try post("anyone?", by: alice, at: 2)
        #expect(try store.views.unreadCount(lobby.id, reader: alice.id) == 0)
        #expect(try store.views.unreadCount(lobby.id, reader: bob.id) == 2)

        let newest = try #require(try store.views.newestMessageHLC(lobby.id))
        try store.author(
            .readMarker(partition: lobby.id, position: newest), in: PartitionDescriptor.ownData(owner: bob.id).id, by: bob,
            nowMillis: Fixtures.now(3))
        #expect(try store.views.unreadCount(lobby.id, reader: bob.id) == 0)

        try post("hello bob", by: alice, at: 4)
        try post("me too", by: bob, at: 5)
        #expect(try store.views.unreadCount(lobby.id, reader: bob.id) == 1)
        #expect(try store.views.unreadCount(lobby.id, reader: alice.id) == 1)
    }

    @Test func idListings_coverMessagesAndLiveTasks() throws {
        let alice = Fixtures.identity(0)
        let lobby = PartitionDescriptor.room(RoomName("lobby")!)
        let store = try Fixtures.store(partitions: [lobby])
        let post = try store.author(.post(text: "x", attachments: [], location: nil, replyTo: nil), in: lobby.id, by: alice, nowMillis: Fixtures.now(1))
        let kept = try store.author(.taskCreate(title: "keep", owner: nil), in: lobby.id, by: alice, nowMillis: Fixtures.now(2))
        let gone = try store.author(.taskCreate(title: "drop", owner: nil), in: lobby.id, by: alice, nowMillis: Fixtures.now(3))
        try store.author(.taskDelete(target: gone.id), in: lobby.id, by: alice, nowMillis: Fixtures.now(4))
        #expect(try store.views.messageIDs() == [post.id])
        #expect(try store.views.taskIDs() == [kept.id])
    }
}
