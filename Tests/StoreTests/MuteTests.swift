import Identity
import Replica
import Store
import TestSupport
import Testing

/// A chat's mute (`OperationBody.chatMute`) lives in the person's own partition: every device
/// of theirs ends with the newest choice, in whatever order the ops arrive, and a rebuild of the
/// views keeps it.
@Suite struct MuteTests {
    let alice = Fixtures.identity(1)
    let laptop = Fixtures.identity(2)
    let lobby = PartitionDescriptor.room(RoomName("lobby")!)
    var ownData: PartitionDescriptor { .ownData(owner: alice.id) }

    @Test func theNewestMuteWins_onEveryDevice_andSurvivesARebuild() throws {
        let (a, l) = (try Nodes.store(alice), try Nodes.store(laptop))
        for store in [a, l] {
            try store.log.ensurePartition(lobby, joined: true)
            try store.log.ensurePartition(ownData, joined: true)
        }
        try a.certifyDevice(DeviceRequest(person: alice.id, device: laptop, name: "laptop"), by: alice, nowMillis: Fixtures.now(1))
        try Nodes.sync([a, l])
        #expect(try !a.views.isMuted(lobby.id, owner: alice.id))

        // The laptop's unmute is older than the desk's mute; it arrives last at the desk, first at the laptop.
        try l.author(.chatMute(partition: lobby.id, muted: false), in: ownData.id, by: laptop, nowMillis: Fixtures.now(20))
        try a.author(.chatMute(partition: lobby.id, muted: true), in: ownData.id, by: alice, nowMillis: Fixtures.now(30))
        try Nodes.sync([a, l])
        for store in [a, l] {
            #expect(try store.views.isMuted(lobby.id, owner: alice.id))
            #expect(try store.joinedRooms(reader: alice.id).first { $0.id == lobby.id }?.muted == true)
        }
        #expect(try !a.views.isMuted(lobby.id, owner: laptop.id), "a mute is the person's, asked for by the person's id")

        try l.author(.chatMute(partition: lobby.id, muted: false), in: ownData.id, by: laptop, nowMillis: Fixtures.now(40))
        try Nodes.sync([a, l])
        try a.views.rebuildViews()
        for store in [a, l] { #expect(try !store.views.isMuted(lobby.id, owner: alice.id)) }
    }
}
