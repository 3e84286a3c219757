import Identity
import Replica
import TestSupport
import Testing

@Suite struct MembershipTests {
    let creator = Fixtures.identity(0).id
    let bob = Fixtures.identity(1).id
    let carol = Fixtures.identity(2).id
    let dave = Fixtures.identity(3).id

    func event(_ author: UserID, _ ms: UInt64, _ action: Membership.Event.Action) -> Membership.Event {
        Membership.Event(author: author, hlc: HLC(wallMillis: ms, counter: 0), action: action)
    }

    @Test func addsByMembers_reachAFixedPoint_inAnyOrder() {
        let events = [
            event(carol, 30, .add(dave)),  // carol was added by bob, who was an initial member
            event(bob, 20, .add(carol)),
            event(creator, 10, .create(members: [bob])),
        ]
        for order in [events, events.reversed(), [events[1], events[0], events[2]]] {
            let state = Membership.resolve(creator: creator, events: order)
            #expect(state.everMember == [creator, bob, carol, dave])
            #expect(state.current == [creator, bob, carol, dave])
        }
    }

    @Test func addByANonMember_hasNoEffect() {
        let state = Membership.resolve(
            creator: creator,
            events: [
                event(creator, 10, .create(members: [])),
                event(dave, 20, .add(carol)),
            ])
        #expect(state.everMember == [creator])
    }

    @Test func removeWinsATie_andALaterAddReadmits() {
        let tie = Membership.resolve(
            creator: creator,
            events: [
                event(creator, 10, .create(members: [bob])),
                event(bob, 20, .add(carol)),
                event(creator, 20, .remove(carol)),
            ])
        #expect(tie.everMember.contains(carol))
        #expect(!tie.current.contains(carol))
        let readmitted = Membership.resolve(
            creator: creator,
            events: [
                event(creator, 10, .create(members: [bob])),
                event(creator, 20, .remove(bob)),
                event(creator, 30, .add(bob)),
            ])
        #expect(readmitted.current.contains(bob))
    }

    @Test func onlyTheCreatorRemoves_butAnyoneMayLeave() {
        let state = Membership.resolve(
            creator: creator,
            events: [
                event(creator, 10, .create(members: [bob, carol])),
                event(bob, 20, .remove(carol)),
                event(carol, 30, .leave),
            ])
        #expect(state.current == [creator, bob])
        #expect(state.everMember == [creator, bob, carol])
    }

    @Test func createByAnotherAuthor_isIgnored() {
        let state = Membership.resolve(creator: creator, events: [event(bob, 10, .create(members: [carol]))])
        #expect(state.everMember.isEmpty)
    }

    @Test func removedMember_cannotAddAnyoneBack_withALaterClock() {
        let state = Membership.resolve(
            creator: creator,
            events: [
                event(creator, 10, .create(members: [bob, carol])),
                event(creator, 20, .remove(bob)),
                event(bob, 30, .add(bob)),
                event(bob, 31, .add(dave)),
            ])
        #expect(state.current == [creator, carol])
        #expect(state.everMember == [creator, bob, carol, dave])
        #expect(state.removedAt[bob] == HLC(wallMillis: 20, counter: 0))
        #expect(state.removedAt[dave] == HLC(raw: 0))  // never effectively added: nothing of theirs is shown
    }

    @Test func theCreateComesFirst_evenWithALaterClock() {
        // The creator's clock runs ahead: bob's add, written after he saw the create, carries an
        // earlier HLC. The create is the root of the conversation and is replayed first.
        let state = Membership.resolve(
            creator: creator,
            events: [
                event(creator, 500, .create(members: [bob])),
                event(bob, 100, .add(carol)),
            ])
        #expect(state.current == [creator, bob, carol])
    }

    @Test func leaveAndReadd_clearTheRemovalTime() {
        let state = Membership.resolve(
            creator: creator,
            events: [
                event(creator, 10, .create(members: [bob])),
                event(bob, 20, .leave),
                event(creator, 30, .add(bob)),
            ])
        #expect(state.current == [creator, bob])
        #expect(state.removedAt.isEmpty)
    }
}
