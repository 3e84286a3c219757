import Gossip
import Identity
import Replica
import TestSupport
import Testing
import Wire

/// Which partitions go to which peer (docs/DESIGN.md §3.2).
@Suite struct SyncPolicyTests {
    let me = Fixtures.identity(0)
    let friend = Fixtures.identity(1)
    let stranger = Fixtures.identity(2)

    var conversation: PartitionDescriptor { .conversation(creator: me.id, nonce: Bytes32(w0: 5, w1: 5, w2: 5, w3: 5)) }
    var policy: SyncPolicy { SyncPolicy(localUser: me.id, conversationMembers: [conversation.id: [me.id, friend.id]], carriesForOthers: false) }

    @Test func storeAndForward_offersConversationsInboxesAndRoomsToEveryone_andCarriesWithinTheLimit() {
        var carrier = SyncPolicy(localUser: stranger.id, conversationMembers: [conversation.id: [me.id, friend.id]])
        #expect(carrier.sharing(conversation, with: me.id) == .offer)
        #expect(carrier.sharing(.inbox(owner: friend.id), with: me.id) == .offer)
        #expect(carrier.sharing(lobby, with: me.id) == .offer, "a room reaches its holders through nodes that did not join it")
        #expect(carrier.shouldCarry(conversation, offeredBy: me.id) && carrier.isCarrierOnly(conversation))
        #expect(carrier.shouldCarry(.inbox(owner: friend.id), offeredBy: me.id) && carrier.isCarrierOnly(.inbox(owner: friend.id)))
        #expect(carrier.shouldCarry(lobby, offeredBy: me.id) && carrier.isCarrierOnly(lobby), "a room a peer offers is carried, not joined")
        #expect(!policy.isCarrierOnly(conversation) && !policy.isCarrierOnly(.inbox(owner: me.id)))
        carrier.carriedCount = SyncPolicy.maxCarried
        #expect(!carrier.shouldCarry(conversation, offeredBy: me.id))
        #expect(!carrier.shouldCarry(lobby, offeredBy: me.id))
        #expect(policy.shouldCarry(conversation, offeredBy: friend.id), "a member always holds its own")
    }

    @Test func blobsAreServed_onlyToWhoMayReadThePartition() {
        #expect(SyncPolicy.servesBlobs(of: lobby, to: stranger.id, joined: true, members: []))
        #expect(!SyncPolicy.servesBlobs(of: lobby, to: stranger.id, joined: false, members: []))
        #expect(SyncPolicy.servesBlobs(of: .directory, to: stranger.id, joined: false, members: []))
        #expect(SyncPolicy.servesBlobs(of: conversation, to: friend.id, joined: true, members: [me.id, friend.id]))
        #expect(SyncPolicy.servesBlobs(of: conversation, to: me.id, joined: false, members: []), "the creator is a member")
        #expect(!SyncPolicy.servesBlobs(of: conversation, to: stranger.id, joined: true, members: [me.id, friend.id]), "a carrier gets none")
        #expect(!SyncPolicy.servesBlobs(of: .inbox(owner: friend.id), to: friend.id, joined: false, members: []))
        #expect(!SyncPolicy.servesBlobs(of: .ownData(owner: me.id), to: me.id, joined: true, members: []))
    }

    @Test func sharing_followsTheKindsRules() {
        #expect(policy.sharing(lobby, with: stranger.id) == .ifPeerHolds)
        #expect(policy.sharing(.directory, with: stranger.id) == .offer)
        #expect(policy.sharing(conversation, with: friend.id) == .offer)
        #expect(policy.sharing(conversation, with: stranger.id) == .never)
        #expect(policy.sharing(.conversation(creator: me.id, nonce: .zero), with: friend.id) == .never)
        #expect(policy.sharing(.inbox(owner: friend.id), with: friend.id) == .offer)
        #expect(policy.sharing(.inbox(owner: friend.id), with: stranger.id) == .ifPeerHolds)
        #expect(policy.sharing(.ownData(owner: me.id), with: me.id) == .offer)
        #expect(policy.sharing(.ownData(owner: me.id), with: friend.id) == .never)
    }

    @Test func shouldCarry_onlyWhatThisUserTakesPartIn() {
        #expect(!policy.shouldCarry(lobby, offeredBy: friend.id))
        #expect(policy.shouldCarry(.directory, offeredBy: stranger.id))
        #expect(policy.shouldCarry(conversation, offeredBy: friend.id))
        let theirs = PartitionDescriptor.conversation(creator: friend.id, nonce: .zero)
        #expect(!policy.shouldCarry(theirs, offeredBy: friend.id))
        var invited = policy
        invited.conversationMembers[theirs.id] = [friend.id, me.id]
        #expect(invited.shouldCarry(theirs, offeredBy: friend.id))
        #expect(policy.shouldCarry(.inbox(owner: me.id), offeredBy: friend.id))
        #expect(!policy.shouldCarry(.inbox(owner: friend.id), offeredBy: friend.id))
        #expect(policy.shouldCarry(.ownData(owner: me.id), offeredBy: me.id))
        #expect(!policy.shouldCarry(.ownData(owner: friend.id), offeredBy: friend.id))
    }
}

extension SyncPolicyTests {
    /// Pins on top of the overlay: the person's other devices first, then conversation members,
    /// never the node or its person, at most `maxPinned`.
    @Test func linksToPin_devicesFirst_thenMembers_bounded() {
        let person = UserID(Bytes32(w0: 1, w1: 0, w2: 0, w3: 0)), device = UserID(Bytes32(w0: 2, w1: 0, w2: 0, w3: 0))
        let other = UserID(Bytes32(w0: 3, w1: 0, w2: 0, w3: 0))
        let members = (10..<40).map { UserID(Bytes32(w0: UInt64($0), w1: 0, w2: 0, w3: 0)) }
        let id = PartitionID(Bytes32(w0: 9, w1: 9, w2: 9, w3: 9))
        let stranger = PartitionID(Bytes32(w0: 8, w1: 8, w2: 8, w3: 8))
        let policy = SyncPolicy(
            localUser: device, conversationMembers: [id: Set(members + [person]), stranger: [UserID(Bytes32(w0: 99, w1: 0, w2: 0, w3: 0))]])
        let pinned = policy.linksToPin(person: person, devices: [person, device, other])
        #expect(pinned.count == SyncPolicy.maxPinned)
        #expect(pinned.contains(other) && !pinned.contains(person) && !pinned.contains(device))
        #expect(!pinned.contains(UserID(Bytes32(w0: 99, w1: 0, w2: 0, w3: 0))), "members of a conversation the person is not in")
        #expect(SyncPolicy(localUser: device).linksToPin(person: person, devices: [person, device]).isEmpty)
    }
}
