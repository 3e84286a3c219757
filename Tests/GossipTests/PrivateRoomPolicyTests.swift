import Gossip
import Identity
import Replica
import TestSupport
import Testing
import Wire

/// Private rooms in the sync policy (docs/DESIGN.md §3.7): offered to everyone and carried like
/// conversations, blobs only from a node that joined.
@Suite struct PrivateRoomPolicyTests {
    let me = Fixtures.identity(0)
    let peer = Fixtures.identity(1)
    let room = PartitionDescriptor.privateRoom(roomKey: Bytes32(w0: 9, w1: 8, w2: 7, w3: 6))

    @Test func privateRooms_areOfferedToEveryPeer_carriedWithinTheLimit_andTheirBlobsServedByHolders() {
        var carrier = SyncPolicy(localUser: me.id)
        #expect(carrier.sharing(room, with: peer.id) == .offer)
        #expect(carrier.shouldCarry(room, offeredBy: peer.id) && carrier.isCarrierOnly(room))
        carrier.carriedCount = SyncPolicy.maxCarried
        #expect(!carrier.shouldCarry(room, offeredBy: peer.id))
        let membersOnly = SyncPolicy(localUser: me.id, carriesForOthers: false)
        #expect(membersOnly.sharing(room, with: peer.id) == .ifPeerHolds)
        #expect(!membersOnly.shouldCarry(room, offeredBy: peer.id))
        #expect(SyncPolicy.servesBlobs(of: room, to: peer.id, joined: true, members: []))
        #expect(!SyncPolicy.servesBlobs(of: room, to: peer.id, joined: false, members: []), "a carrier serves none")
    }
}
