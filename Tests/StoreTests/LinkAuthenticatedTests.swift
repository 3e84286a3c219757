import Foundation
import Identity
import Replica
import Store
import TestSupport
import Testing

import struct Replica.Operation

/// Ops pushed by their own author over its link are stored before their signature is checked
/// (`ReplicaStore.maxLinkAuthenticatedTail`), and checked before they leave (`sendable`).
@Suite struct LinkAuthenticatedTests {
    let alice = Fixtures.identity(0)
    let bob = Fixtures.identity(1)
    let carol = Fixtures.identity(2)
    let lobby = PartitionDescriptor.room(RoomName("lobby")!)

    /// `op` with one byte of its signature flipped: the same id (the signature is not hashed into
    /// it), so it still links into the chain, but it does not verify.
    func badlySigned(_ op: Operation) throws -> Operation {
        var header = op.header
        header[Operation.signedBytes + 9] ^= 0x01
        return try Operation(header: header, body: op.body)
    }

    func apply(_ op: Operation, _ store: ReplicaStore, over link: UserID?) throws -> ApplyOutcome {
        try store.apply([op], nowMillis: Fixtures.now(), linkAuthor: link).first!
    }

    @Test func badSignature_isStoredOnlyWhenItsAuthorPushedItOverItsOwnLink() throws {
        var factory = OpFactory()
        let bad = try badlySigned(factory.make(post("from alice"), in: lobby.id, by: alice))
        let store = try Fixtures.store(partitions: [lobby])
        #expect(try apply(bad, store, over: nil) == .rejected(.invalid(.badSignature)))
        #expect(try apply(bad, store, over: bob.id) == .rejected(.invalid(.badSignature)))
        #expect(try store.opCount(lobby.id) == 0)
        #expect(try apply(bad, store, over: alice.id) == .applied)
        #expect(try store.history(lobby.id).map(\.text) == ["from alice"])
    }

    @Test func theOpPastTheLongestTail_hasItsSignatureChecked_andAGoodOneClosesTheTail() throws {
        var factory = OpFactory()
        let tailLength = Int(ReplicaStore.maxLinkAuthenticatedTail)
        let ops = (0...tailLength).map { factory.make(post("m\($0)"), in: lobby.id, by: alice) }
        let store = try Fixtures.store(partitions: [lobby])
        for op in ops.prefix(tailLength) { #expect(try apply(try badlySigned(op), store, over: alice.id) == .applied) }
        // The tail is full: the next op is checked, so a bad one is refused...
        #expect(try apply(try badlySigned(ops[tailLength]), store, over: alice.id) == .rejected(.invalid(.badSignature)))
        // ...and a good one authenticates the chain below it: no op of it is checked again.
        #expect(try apply(ops[tailLength], store, over: alice.id) == .applied)
        let stored = try store.ops(in: lobby.id, author: alice.id, fromSeq: 1, limit: 100)
        let (sendable, discarded) = try store.sendable(stored, me: bob.id)
        #expect(sendable.count == tailLength + 1)
        #expect(discarded == nil)
    }

    @Test func sendable_checksTheTail_andDropsABadOpWithTheChainAfterIt() throws {
        var factory = OpFactory()
        let ops = (1...4).map { factory.make(post("m\($0)"), in: lobby.id, by: alice) }
        let store = try Fixtures.store(partitions: [lobby])
        // Good, good, bad, good: all stored on alice's link's word.
        for (index, op) in ops.enumerated() {
            #expect(try apply(index == 2 ? try badlySigned(op) : op, store, over: alice.id) == .applied)
        }
        #expect(try store.history(lobby.id).map(\.text) == ["m1", "m2", "m3", "m4"])
        let stored = try store.ops(in: lobby.id, author: alice.id, fromSeq: 1, limit: 100)
        // Alice's own node holds no such tail of its own ops: it sends them as they are.
        #expect(try store.sendable(stored, me: alice.id).ops.count == 4)
        let (sendable, discarded) = try store.sendable(stored, me: bob.id)
        #expect(sendable.map(\.seq) == [1, 2])
        #expect(discarded?.seq == 3)
        #expect(try store.opCount(lobby.id) == 2)
        #expect(try store.history(lobby.id).map(\.text) == ["m1", "m2"])
        #expect(try store.heads(lobby.id).map(\.maxSeq) == [2])
        // The places are free for the good ops, which take the ordinary path.
        #expect(try store.apply(Array(ops[2...]), nowMillis: Fixtures.now()) == [.applied, .applied])
        #expect(try store.history(lobby.id).map(\.text) == ["m1", "m2", "m3", "m4"])
    }

    @Test func aGoodlySignedOp_replacesABadlySignedOneHeldOnTheLinksWord_withoutAForkProof() throws {
        var factory = OpFactory()
        let good = factory.make(post("first"), in: lobby.id, by: alice)
        var other = OpFactory()
        let conflicting = other.make(post("another first"), in: lobby.id, by: alice)
        let store = try Fixtures.store(partitions: [lobby])
        #expect(try apply(try badlySigned(conflicting), store, over: alice.id) == .applied)
        #expect(try store.apply(good, nowMillis: Fixtures.now()) == .applied)
        #expect(try store.forkProofs(lobby.id).isEmpty)
        #expect(try store.history(lobby.id).map(\.text) == ["first"])
        #expect(try store.heads(lobby.id).first?.frozenAt == nil)
    }

    @Test func theTail_outlivesReopeningTheStore() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-tail-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var factory = OpFactory()
        let op = factory.make(post("held"), in: lobby.id, by: alice)
        do {
            let store = try ReplicaStore(path: directory + "/store.db")
            try store.ensurePartition(lobby, joined: true)
            #expect(try apply(try badlySigned(op), store, over: alice.id) == .applied)
        }
        let reopened = try ReplicaStore(path: directory + "/store.db")
        let stored = try reopened.ops(in: lobby.id, author: alice.id, fromSeq: 1, limit: 10)
        #expect(try reopened.sendable(stored, me: bob.id).discarded?.seq == 1)
        #expect(try reopened.opCount(lobby.id) == 0)
    }
}
