import Identity
import Replica
import Store
import TestSupport
import Testing
import Wire

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
}
