import Identity
import Replica
import TestSupport
import Testing
import Wire

@testable import Store

/// An author who signs two different ops at one (partition, seq) is caught, the proof kept, and
/// their later ops excluded the same way everywhere (docs/DESIGN.md §3.3).
@Suite struct ForkTests {
    let alice = Fixtures.identity(0)
    let mallory = Fixtures.identity(3)
    let lobby = PartitionDescriptor.room(RoomName("lobby")!)

    /// Mallory writes m1, m2, then two different third ops, each continued on its own branch.
    func forkedLog() -> (common: [Operation], branchA: [Operation], branchB: [Operation]) {
        var factory = OpFactory()
        let common = [factory.make(post("m1"), in: lobby.id, by: mallory), factory.make(post("m2"), in: lobby.id, by: mallory)]
        let a3 = factory.make(post("a3"), in: lobby.id, by: mallory)
        let a4 = factory.make(post("a4"), in: lobby.id, by: mallory)
        let b3 = factory.make(post("b3"), in: lobby.id, by: mallory, seq: 3, prev: common[1].id)
        factory.setHead(lobby.id, mallory.id, seq: 3, id: b3.id)
        let b4 = factory.make(post("b4"), in: lobby.id, by: mallory)
        return (common, [a3, a4], [b3, b4])
    }

    @Test func fork_isDetected_provenAndExcludedIdenticallyOnEveryReplica() throws {
        let log = forkedLog()
        var factory = OpFactory()
        let honest = factory.make(post("alice speaks"), in: lobby.id, by: alice)
        let one = try Fixtures.store(partitions: [lobby])
        let two = try Fixtures.store(partitions: [lobby])
        // Replica one sees branch A first; replica two sees branch B first.
        _ = try one.apply(log.common + log.branchA + [honest], nowMillis: Fixtures.now())
        _ = try two.apply(log.common + log.branchB + [honest], nowMillis: Fixtures.now())
        #expect(try one.views.history(lobby.id).count == 5)

        let outcomeOne = try one.apply(log.branchB[0], nowMillis: Fixtures.now())
        let outcomeTwo = try two.apply(log.branchA[0], nowMillis: Fixtures.now())
        guard case .forkDetected(let proofOne) = outcomeOne, case .forkDetected(let proofTwo) = outcomeTwo else {
            Issue.record("expected forks, got \(outcomeOne) and \(outcomeTwo)")
            return
        }
        #expect(proofOne == proofTwo)
        #expect(proofOne.seq == 3 && proofOne.author == mallory.id)
        #expect(try one.log.forkProofs(lobby.id) == [proofOne])
        #expect(try one.log.digest(lobby.id) == two.log.digest(lobby.id))
        #expect(try one.views.viewSnapshot() == two.views.viewSnapshot())
        #expect(try one.views.history(lobby.id).map(\.text).sorted() == ["alice speaks", "m1", "m2"])
        // Later ops of the forked author are excluded, whichever branch they come from.
        #expect(try one.apply(log.branchA[1], nowMillis: Fixtures.now()) == .rejected(.authorForked(at: 3)))
        #expect(try two.apply(log.branchB[1], nowMillis: Fixtures.now()) == .rejected(.authorForked(at: 3)))
    }

    @Test func forkProof_fromAPeer_excludesTheAuthor() throws {
        let log = forkedLog()
        let proof = try ForkProof(log.branchA[0].header, log.branchB[0].header)
        let store = try Fixtures.store(partitions: [lobby])
        _ = try store.apply(log.common + log.branchA, nowMillis: Fixtures.now())
        #expect(try store.forks.apply(proof) == true)
        #expect(try store.forks.apply(proof) == false)
        #expect(try store.views.history(lobby.id).map(\.text) == ["m1", "m2"])
        #expect(try store.log.heads(lobby.id).first?.frozenAt == 3)
    }

    /// A proof of a fork above the ops a replica holds (it arrives by gossip before the ops do)
    /// keeps what the replica holds: its head stays at its newest op, frozen at the fork, so the
    /// ops between are fetched and the replica converges with one that held them all.
    @Test func forkProof_aboveTheOpsHeld_keepsThemAndTheHead() throws {
        let log = forkedLog()
        let proof = try ForkProof(log.branchA[0].header, log.branchB[0].header)
        let behind = try Fixtures.store(partitions: [lobby])
        _ = try behind.apply([log.common[0]], nowMillis: Fixtures.now())
        #expect(try behind.forks.apply(proof) == true)
        let head = try #require(try behind.log.heads(lobby.id).first)
        #expect(head.maxSeq == 1 && head.headID == log.common[0].id && head.frozenAt == 3)
        #expect(try behind.log.opCount(lobby.id) == 1)
        // The op between arrives: stored, and the replica equals one that held both before the proof.
        #expect(try behind.apply([log.common[1]], nowMillis: Fixtures.now()) == [.applied])
        let ahead = try Fixtures.store(partitions: [lobby])
        _ = try ahead.apply(log.common, nowMillis: Fixtures.now())
        _ = try ahead.forks.apply(proof)
        #expect(try behind.log.digest(lobby.id) == ahead.log.digest(lobby.id))
        #expect(try behind.views.history(lobby.id).map(\.text) == ["m1", "m2"])
        #expect(try behind.log.opCount() == 2 && behind.log.countedOpRows() == 2)
    }

    @Test func forkProof_withABadSignature_isRefused() throws {
        let log = forkedLog()
        var forged = log.branchB[0].header
        forged[Operation.signedBytes] ^= 1
        #expect(throws: OperationError.badSignature) { try ForkProof(log.branchA[0].header, forged) }
        #expect(throws: OperationError.self) { try ForkProof(log.branchA[0].header, log.branchA[0].header) }
    }

    @Test func conflictingOpWithBadSignature_isNotAFork() throws {
        let log = forkedLog()
        let store = try Fixtures.store(partitions: [lobby])
        _ = try store.apply(log.common + log.branchA, nowMillis: Fixtures.now())
        var bytes = log.branchB[0].encoded
        bytes[Operation.signedBytes + 1] ^= 1
        let forged = try Operation(encoded: bytes)
        #expect(try store.apply(forged, nowMillis: Fixtures.now()) == .rejected(.invalid(.badSignature)))
        #expect(try store.log.forkProofs(lobby.id).isEmpty)
    }

    /// A fork is listed once per forked chain, named for people, with the person it belongs to
    /// (a device's fork is its person's), and counted on that person's line of `people`.
    @Test func chains_listEveryForkedChain_withItsPerson_andPeopleCountIt() throws {
        let (desk, laptop) = (Fixtures.identity(1), Fixtures.identity(2))
        let store = try Nodes.store(alice)
        try store.log.ensurePartition(lobby, joined: true)
        #expect(try store.forks.chains().isEmpty)
        var factory = OpFactory()
        let malloryProfile = factory.make(
            .profile(subject: mallory.id, nick: "mallory", displayName: nil, status: nil, presence: nil, avatar: nil),
            in: PartitionDescriptor.directory.id, by: mallory)
        _ = try store.apply(malloryProfile, nowMillis: Fixtures.now())
        let deskStore = try Nodes.store(desk)
        try deskStore.author(
            .profile(subject: desk.id, nick: "desk", displayName: nil, status: nil, presence: nil, avatar: nil),
            in: PartitionDescriptor.directory.id, by: desk, nowMillis: Fixtures.now())
        try deskStore.certifyDevice(DeviceRequest(person: desk.id, device: laptop, name: "laptop"), by: desk, nowMillis: Fixtures.now(1))
        try Nodes.sync([store, deskStore], only: [PartitionDescriptor.directory.id])
        #expect(try store.devices.person(of: laptop.id) == desk.id)

        let dev = PartitionDescriptor.room(RoomName("dev")!)
        try store.log.ensurePartition(dev, joined: true)
        for (author, room) in [(mallory, lobby), (laptop, lobby), (mallory, dev)] {
            let log = ForkedLog(author: author, partition: room.id)
            _ = try store.apply(log.common + log.branchA, nowMillis: Fixtures.now())
            guard case .forkDetected = try store.apply(log.branchB[0], nowMillis: Fixtures.now()) else {
                Issue.record("no fork detected for \(author.id.short) in \(room.displayName)")
                return
            }
        }
        let chains = try store.forks.chains()
        let expected = [
            ForkedChain(partition: lobby.id, kind: .room, name: "#lobby", author: mallory.id, person: mallory.id, seq: 3),
            ForkedChain(partition: lobby.id, kind: .room, name: "#lobby", author: laptop.id, person: desk.id, seq: 3),
            ForkedChain(partition: dev.id, kind: .room, name: "#dev", author: mallory.id, person: mallory.id, seq: 3),
        ]
        let byIDs = expected.sorted { a, b in
            a.partition != b.partition
                ? a.partition.bytes.lexicographicallyPrecedes(b.partition.bytes) : a.author.bytes.lexicographicallyPrecedes(b.author.bytes)
        }
        #expect(chains == byIDs)
        #expect(try store.forks.chains() == chains, "the same order every time")

        let people = try store.directory.people(me: alice.id)
        let forks = Dictionary(uniqueKeysWithValues: people.map { ($0.user, $0.forks) })
        #expect(forks == [alice.id: 0, mallory.id: 2, desk.id: 1], "\(people)")
    }
}
