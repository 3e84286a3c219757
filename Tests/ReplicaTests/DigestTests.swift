import Identity
import Replica
import TestSupport
import Testing
import Wire

@Suite struct DigestTests {
    let alice = Fixtures.identity(0).id
    let bob = Fixtures.identity(1).id

    @Test func digest_ignoresHeadOrder_butSeesEveryField() {
        let a = Head(author: alice, maxSeq: 3, headID: OpID(Bytes32(w0: 1, w1: 0, w2: 0, w3: 0)))
        let b = Head(author: bob, maxSeq: 5, headID: OpID(Bytes32(w0: 2, w1: 0, w2: 0, w3: 0)))
        #expect(PartitionDigest(heads: [a, b]) == PartitionDigest(heads: [b, a]))
        var changed = b
        changed.maxSeq = 6
        #expect(PartitionDigest(heads: [a, changed]) != PartitionDigest(heads: [a, b]))
        var frozen = b
        frozen.frozenAt = 4
        #expect(PartitionDigest(heads: [a, frozen]) != PartitionDigest(heads: [a, b]))
        #expect(PartitionDigest(heads: []) != PartitionDigest(heads: [a]))
    }

    @Test func clockKeys_orderByHLCThenAuthorThenSeq() {
        let early = ClockKey(hlc: HLC(raw: 1), author: bob, seq: 9)
        let lateA = ClockKey(hlc: HLC(raw: 2), author: min(alice, bob), seq: 1)
        let lateB = ClockKey(hlc: HLC(raw: 2), author: max(alice, bob), seq: 1)
        let lateB2 = ClockKey(hlc: HLC(raw: 2), author: max(alice, bob), seq: 2)
        #expect(early < lateA && lateA < lateB && lateB < lateB2)
    }

    @Test func taskRegisters_mergeTheSameInAnyOrder() {
        let alice = Fixtures.identity(0).id
        let target = OpID(Bytes32(w0: 1, w1: 1, w2: 1, w3: 1))
        let ops: [(OperationBody, UserID, HLC, UInt64)] = [
            (.taskCreate(title: "a", owner: nil), alice, HLC(raw: 10), 1),
            (.taskUpdate(target: target, title: "b", status: .inProgress, owner: .unchanged), bob, HLC(raw: 20), 1),
            (.taskUpdate(target: target, title: "c", status: nil, owner: .set(bob)), alice, HLC(raw: 15), 2),
            (.taskUpdate(target: target, title: nil, status: .complete, owner: .cleared), bob, HLC(raw: 20), 2),
        ]
        var reference = TaskState()
        for (body, author, hlc, seq) in ops { reference.apply(body, author: author, hlc: hlc, seq: seq) }
        var seed: UInt64 = 1
        for _ in 0..<20 {
            var random = SeededRandom(seed: seed)
            seed += 1
            var state = TaskState()
            for (body, author, hlc, seq) in ops.shuffled(using: &random) { state.apply(body, author: author, hlc: hlc, seq: seq) }
            #expect(state == reference, "seed \(random.seed)")
        }
        #expect(reference.title.value == "b" && reference.status.value == .complete && reference.owner.value == nil)
    }
}
