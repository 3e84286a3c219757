import Gossip
import Identity
import Replica
import Store
import TestSupport
import Testing
import Wire

/// A forked author (two ops signed at one seq): the proof crosses the link and both replicas
/// exclude the author from the same seq on (docs/DESIGN.md §3.3).
@Suite struct SyncForkTests {
    let alice = Fixtures.identity(0)
    let mallory = Fixtures.identity(3)

    /// Mallory writes m1, m2, then a3 a4 on one branch and b3 b4 on another.
    func forkedLog() -> ForkedLog { ForkedLog(author: mallory, partition: lobby.id) }

    func expectForkExcluded(_ link: TestLink, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for node in [link.a, link.b] {
            let head = try node.store.log.heads(lobby.id).first { $0.author == mallory.id }
            #expect(head?.frozenAt == 3 && head?.maxSeq == 2, "\(node.name): \(String(describing: head))", sourceLocation: sourceLocation)
            #expect(try node.store.log.forkProofs(lobby.id).map(\.seq) == [3], sourceLocation: sourceLocation)
            #expect(node.closedWith == nil, sourceLocation: sourceLocation)
        }
        #expect(try link.a.store.log.digest(lobby.id) == link.b.store.log.digest(lobby.id), sourceLocation: sourceLocation)
        #expect(try link.a.store.views.viewSnapshot() == link.b.store.views.viewSnapshot(), sourceLocation: sourceLocation)
    }

    @Test func branchesOfEqualLength_areProbed_andTheForkIsFoundDownToItsSeq() throws {
        let log = forkedLog()
        var factory = OpFactory()
        let honest = factory.make(post("alice"), in: lobby.id, by: alice)
        let storeA = try Fixtures.store(partitions: [lobby])
        let storeB = try Fixtures.store(partitions: [lobby])
        try load(storeA, log.common + log.branchA + [honest])
        try load(storeB, log.common + log.branchB + [honest])
        let link = makeLink(storeA, storeB)
        try link.connect()

        // Heads differ at seq 4 (fork found there), then at seq 3: two proofs each way at most.
        try expectForkExcluded(link)
        #expect(link.a.sentCount(.fork) >= 1 && link.b.sentCount(.fork) >= 1)
        #expect(try storeA.views.history(lobby.id).map(\.text).sorted() == ["alice", "m1", "m2"])
    }

    @Test func aChainThatDoesNotLink_isProbed_notCountedAgainstThePeer() throws {
        let log = forkedLog()
        let storeA = try Fixtures.store(partitions: [lobby])
        let storeB = try Fixtures.store(partitions: [lobby])
        try load(storeA, log.common + log.branchA)
        try load(storeB, log.common + [log.branchB[0]])
        let link = makeLink(storeA, storeB, configuration: strict)
        try link.connect()

        // B asked for a4, which does not link to b3: it asked for a3 and found the fork.
        try expectForkExcluded(link)
        let wants = link.b.sent.compactMap { if case .want(_, _, let from, let count) = $0 { [from, UInt64(count)] } else { nil } }
        #expect(wants.prefix(2) == [[4, 1], [3, 1]])
    }

    @Test func proofHeldByOneSide_crossesTheLink() throws {
        let log = forkedLog()
        let storeA = try Fixtures.store(partitions: [lobby])
        let storeB = try Fixtures.store(partitions: [lobby])
        try load(storeA, log.common + log.branchA)
        #expect(try storeA.apply(log.branchB[0], nowMillis: Fixtures.now()) != .applied)
        try load(storeB, log.common + log.branchB)
        let link = makeLink(storeA, storeB, configuration: strict)
        try link.connect()

        try expectForkExcluded(link)
        #expect(link.a.sentCount(.fork) == 1)
        #expect(link.a.opsSentInBatches == 0 && link.b.opsSentInBatches == 0)
    }

    @Test func proofLearnedOnAnotherLink_isGossiped() throws {
        let log = forkedLog()
        let storeA = try Fixtures.store(partitions: [lobby])
        let storeB = try Fixtures.store(partitions: [lobby])
        try load(storeA, log.common + log.branchA)
        try load(storeB, log.common + log.branchA)
        let link = makeLink(storeA, storeB)
        try link.connect()
        #expect(link.a.sent.map(\.type) == [.summary])

        // A third node shows A the other branch; A's shell reports the new proof to this session.
        guard case .forkDetected(let proof) = try storeA.apply(log.branchB[0], nowMillis: Fixtures.now()) else {
            Issue.record("no fork found")
            return
        }
        try link.a.run(link.a.session.onLocalForkProof(proof, now: link.a.now))
        try link.settle()
        try expectForkExcluded(link)
    }

    /// Closes after the first invalid op, so a probe that counted would show.
    var strict: GossipConfiguration {
        var configuration = GossipConfiguration()
        configuration.maxInvalidOps = 0
        return configuration
    }
}
