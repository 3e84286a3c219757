import Identity
import Replica
import Store
import TestSupport
import Testing

/// One person, several devices (docs/DESIGN.md §3.8), on stores synced without a network: a
/// certified device writes its own chains as its person, reads the person's conversations, and
/// once revoked is refused everywhere past its cutoff.
@Suite struct DeviceTests {
    let alice = Fixtures.identity(1)
    let laptop = Fixtures.identity(2)
    let bob = Fixtures.identity(3)
    let lobby = PartitionDescriptor.room(RoomName("lobby")!)

    /// Alice's first device, her laptop certified by it, and Bob, all synced.
    func paired() throws -> (alice: ReplicaStore, laptop: ReplicaStore, bob: ReplicaStore) {
        let (a, l, b) = (try Nodes.store(alice), try Nodes.store(laptop), try Nodes.store(bob))
        for store in [a, l, b] { try store.log.ensurePartition(lobby, joined: true) }
        try a.author(
            .profile(subject: alice.id, nick: "alice", displayName: nil, status: nil, presence: nil, avatar: nil),
            in: PartitionDescriptor.directory.id, by: alice, nowMillis: Fixtures.now())
        try a.certifyDevice(DeviceRequest(person: alice.id, device: laptop, name: "laptop"), by: alice, nowMillis: Fixtures.now(1))
        try Nodes.sync([a, l, b])
        return (a, l, b)
    }

    @Test func aCertifiedDevice_writesAsItsPerson_withOneMergedProfile() throws {
        let (a, l, b) = try paired()
        #expect(try b.devices.person(of: laptop.id) == alice.id)
        #expect(try l.devices.devices(of: alice.id).map(\.name) == ["first device", "laptop"])
        // Both devices write at once: separate chains, no fork.
        try a.author(post("from the desk"), in: lobby.id, by: alice, nowMillis: Fixtures.now(10))
        try l.author(post("from the laptop"), in: lobby.id, by: laptop, nowMillis: Fixtures.now(10))
        try l.author(
            .profile(subject: alice.id, nick: nil, displayName: nil, status: "on the road", presence: nil, avatar: nil),
            in: PartitionDescriptor.directory.id, by: laptop, nowMillis: Fixtures.now(20))
        try Nodes.sync([a, l, b])
        let history = try b.views.history(lobby.id)
        #expect(Set(history.map { $0.text }) == Set(["from the desk", "from the laptop"]))
        #expect(history.allSatisfy { $0.author == alice.id && $0.nick == "alice" })
        let people = try b.directory.people(me: bob.id)
        let shown = try #require(people.first { $0.user == alice.id })
        #expect(shown.nick == "alice" && shown.status == "on the road")
        #expect(!people.contains { $0.user == laptop.id }, "a device is not a person of its own")
        #expect(try a.log.forkProofs(lobby.id).isEmpty && b.log.forkProofs(PartitionDescriptor.directory.id).isEmpty)
        #expect(try a.directory.people(me: laptop.id).first?.isMe == true && l.directory.people(me: laptop.id).first?.user == alice.id)
    }

    @Test func aDeviceWithoutACertificate_cannotWriteAsThePerson_untilOneArrives() throws {
        let (a, b) = (try Nodes.store(alice), try Nodes.store(bob))
        let stranger = try Nodes.store(laptop)
        let profile = try stranger.author(
            .profile(subject: laptop.id, nick: "x", displayName: nil, status: nil, presence: nil, avatar: nil), in: PartitionDescriptor.directory.id,
            by: laptop, nowMillis: Fixtures.now())
        var factory = OpFactory()
        factory.setHead(PartitionDescriptor.directory.id, laptop.id, seq: profile.seq, id: profile.id)
        let forged = factory.make(
            .profile(subject: alice.id, nick: "mallory", displayName: nil, status: nil, presence: nil, avatar: nil), in: PartitionDescriptor.directory.id,
            by: laptop)
        #expect(try b.apply(profile, nowMillis: Fixtures.now()) == .applied)
        #expect(try b.apply(forged, nowMillis: Fixtures.now()) == .rejected(.rule(.notOwnProfile)))
        // A certificate by someone else's key for Alice does not verify.
        let bogus = DeviceCertificate(person: alice.id, device: laptop, certifier: bob, name: "laptop")
        var bobFactory = OpFactory()
        let bogusOp = bobFactory.make(.deviceCertificate(bogus), in: PartitionDescriptor.directory.id, by: bob)
        #expect(try b.apply(bogusOp, nowMillis: Fixtures.now()) == .rejected(.rule(.unknownDevice)))
        // Alice's own certificate makes the waiting profile op acceptable.
        try a.certifyDevice(DeviceRequest(person: alice.id, device: laptop, name: "laptop"), by: alice, nowMillis: Fixtures.now(1))
        try Nodes.sync([a, b])
        #expect(try b.apply(forged, nowMillis: Fixtures.now()) == .applied)
        #expect(try b.directory.profile(alice.id)?.nick == "mallory")
    }

    @Test func aNewDevice_readsThePersonsConversations() throws {
        let (a, l, b) = try paired()
        let conversation = try b.createConversation(name: "plans", members: [alice.id], by: bob, nowMillis: Fixtures.now(30))
        try Nodes.sync([a, l, b])
        for store in [a, l] { try store.processInbox(me: store === a ? alice : laptop) }
        try b.author(post("hello alice"), in: conversation.id, by: bob, nowMillis: Fixtures.now(40))
        try Nodes.sync([a, l, b])
        #expect(try Nodes.texts(l, conversation) == ["hello alice"])
        try l.author(post("from my laptop"), in: conversation.id, by: laptop, nowMillis: Fixtures.now(50))
        try Nodes.sync([a, l, b])
        #expect(try Nodes.texts(b, conversation) == ["hello alice", "from my laptop"])
        #expect(try b.views.history(conversation.id).last?.author == alice.id)
    }

    @Test func aDeviceCertifiedAfterAConversationStarted_readsItsHistory() throws {
        let (a, l, b) = (try Nodes.store(alice), try Nodes.store(laptop), try Nodes.store(bob))
        let conversation = try b.createConversation(name: "old", members: [alice.id], by: bob, nowMillis: Fixtures.now())
        try b.author(post("before the laptop"), in: conversation.id, by: bob, nowMillis: Fixtures.now(1))
        try Nodes.sync([a, b])
        try a.processInbox(me: alice)
        try Nodes.sync([a, b])
        try a.certifyDevice(DeviceRequest(person: alice.id, device: laptop, name: "laptop"), by: alice, nowMillis: Fixtures.now(2))
        try l.log.ensurePartition(conversation, joined: true)
        try Nodes.sync([a, l, b])
        #expect(try Nodes.texts(l, conversation) == ["before the laptop"])
    }

    @Test func aRevokedDevice_isRefusedEverywhere_andTheConversationRotates() throws {
        let (a, l, b) = try paired()
        let conversation = try b.createConversation(name: "plans", members: [alice.id], by: bob, nowMillis: Fixtures.now(30))
        try Nodes.sync([a, l, b])
        try l.processInbox(me: laptop)
        try l.author(post("before"), in: lobby.id, by: laptop, nowMillis: Fixtures.now(40))
        try Nodes.sync([a, l, b])
        let epochBefore = try b.keys.requiredEpoch(conversation.id, devices: b.devices)
        try a.revokeDevice(laptop.id, by: alice, nowMillis: Fixtures.now(50))
        // The laptop goes on writing, unaware (a thief).
        try l.author(post("after"), in: lobby.id, by: laptop, nowMillis: Fixtures.now(60))
        try Nodes.sync([a, b])
        let late = try #require(l.log.allOps(in: lobby.id).last)
        #expect(try b.apply(late, nowMillis: Fixtures.now(61)) == .rejected(.rule(.deviceRevoked)))
        #expect(try b.views.history(lobby.id).map(\.text) == ["before"])
        #expect(try b.devices.devices(of: alice.id).first { $0.device == laptop.id }?.revoked == true)
        // A replica that took the late op before the revocation drops it when the revocation arrives.
        let c = try Nodes.store(Fixtures.identity(4))
        try c.log.ensurePartition(lobby, joined: true)
        try Nodes.sync([c, l])
        #expect(try c.views.history(lobby.id).map(\.text) == ["before", "after"])
        try Nodes.sync([a, c])
        #expect(try c.views.history(lobby.id).map(\.text) == ["before"])
        #expect(try c.log.digest(lobby.id) == b.log.digest(lobby.id))
        // Alice rotated the conversation to an epoch the laptop gets no key for.
        #expect(try b.keys.requiredEpoch(conversation.id, devices: b.devices) == epochBefore + 1)
        try b.author(post("after the theft"), in: conversation.id, by: bob, nowMillis: Fixtures.now(70))
        try Nodes.sync([a, l, b])
        #expect(try Nodes.texts(a, conversation).contains("after the theft"))
        #expect(try !Nodes.texts(l, conversation).contains("after the theft"))
    }

    @Test func aDeviceRevokedByARevokedDevice_staysGood() throws {
        let (a, l, b) = try paired()
        let phone = Fixtures.identity(5)
        let p = try Nodes.store(phone)
        try a.certifyDevice(DeviceRequest(person: alice.id, device: phone, name: "phone"), by: alice, nowMillis: Fixtures.now(2))
        try Nodes.sync([a, l, p, b])
        try a.revokeDevice(laptop.id, by: alice, nowMillis: Fixtures.now(10))
        // The laptop, revoked, tries to revoke the phone later.
        try l.revokeDevice(phone.id, by: laptop, nowMillis: Fixtures.now(20))
        try Nodes.sync([a, l, p, b])
        let standing = try b.devices.devices(of: alice.id)
        #expect(standing.first { $0.device == laptop.id }?.revoked == true)
        #expect(standing.first { $0.device == phone.id }?.revoked == false)
    }
}
