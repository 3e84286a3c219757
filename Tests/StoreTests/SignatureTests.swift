import Foundation
import Identity
import Replica
import Store
import TestSupport
import Testing

import struct Replica.Operation

/// Ops held on another op's word — a later op of their run (chain-batched verification) or
/// their author's link (`ReplicaStore.maxLinkAuthenticatedTail`) — have their own signatures
/// checked before they leave (`OutboundChecks.sendable`): every op a node sends or exports verifies alone.
@Suite struct SignatureTests {
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

    /// `op` with an all-zero signature.
    func zeroSigned(_ op: Operation) throws -> Operation {
        var header = op.header
        for index in Operation.signedBytes..<Operation.headerBytes { header[index] = 0 }
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
        #expect(try store.log.opCount(lobby.id) == 0)
        #expect(try apply(bad, store, over: alice.id) == .applied)
        #expect(try store.views.history(lobby.id).map(\.text) == ["from alice"])
    }

    @Test func theOpPastTheLongestTail_hasItsSignatureChecked_andAGoodOneClosesTheTail() throws {
        var factory = OpFactory()
        let tailLength = Int(ReplicaStore.maxLinkAuthenticatedTail)
        let ops = (0...tailLength).map { factory.make(post("m\($0)"), in: lobby.id, by: alice) }
        let store = try Fixtures.store(partitions: [lobby])
        for op in ops.prefix(tailLength) { #expect(try apply(op, store, over: alice.id) == .applied) }
        // The tail is full: the next op is checked, so a bad one is refused...
        #expect(try apply(try badlySigned(ops[tailLength]), store, over: alice.id) == .rejected(.invalid(.badSignature)))
        // ...and a good one is taken, and closes the tail: the next push may be deferred again.
        #expect(try apply(ops[tailLength], store, over: alice.id) == .applied)
        let next = factory.make(post("next"), in: lobby.id, by: alice)
        #expect(try apply(try badlySigned(next), store, over: alice.id) == .applied)
        let stored = try store.log.ops(in: lobby.id, author: alice.id, fromSeq: 1, limit: 100)
        let (sendable, discarded) = try store.outbound.sendable(stored, nowMillis: Fixtures.now())
        #expect(sendable.count == tailLength + 1)
        #expect(discarded?.seq == UInt64(tailLength) + 2)
    }

    /// The hole an export file or a relay could use before: ops whose signatures were zeroed,
    /// with a good chain and a good last signature, are authentic on the chain's word, but no
    /// op of theirs may leave the node as it is.
    @Test func opsTakenOnTheirChainsWord_withZeroedSignatures_neverLeave_andTheirPlacesAreCheckedAfterwards() throws {
        var factory = OpFactory()
        let ops = (1...6).map { factory.make(post("m\($0)"), in: lobby.id, by: alice) }
        let poisoned = try ops.enumerated().map { index, op in index == ops.count - 1 ? op : try zeroSigned(op) }
        let store = try Fixtures.store(partitions: [lobby])
        #expect(try store.apply(poisoned, nowMillis: Fixtures.now()) == Array(repeating: .applied, count: 6))
        // A run answering a WANT: nothing below the bad op leaves, and the bad op and its chain go.
        let stored = try store.log.ops(in: lobby.id, author: alice.id, fromSeq: 1, limit: 100)
        let (sendable, discarded) = try store.outbound.sendable(stored, nowMillis: Fixtures.now())
        #expect(sendable.isEmpty)
        #expect(discarded?.seq == 1)
        #expect(try store.log.opCount(lobby.id) == 0)
        #expect(try store.views.history(lobby.id).isEmpty)
        #expect(try store.log.refusedSignatureCount() == 1)
        // The same poisoned run again: its first op's place was refused, so that op's own
        // signature is checked, and the run's chain-batched proof does not carry it in.
        #expect(try store.apply(poisoned, nowMillis: Fixtures.now()).first == .rejected(.invalid(.badSignature)))
        #expect(try store.log.opCount(lobby.id) == 0)
        // Good copies are taken, the refused place is forgotten, and they leave as they are.
        #expect(try store.apply(ops, nowMillis: Fixtures.now()) == Array(repeating: .applied, count: 6))
        #expect(try store.log.refusedSignatureCount() == 0)
        let again = try store.log.ops(in: lobby.id, author: alice.id, fromSeq: 1, limit: 100)
        #expect(try store.outbound.sendable(again, nowMillis: Fixtures.now()) == (ops, nil))
    }

    @Test func aLoneOpTakenOnItsChainsWord_isCheckedBeforeItIsPushed() throws {
        var factory = OpFactory()
        let ops = (1...3).map { factory.make(post("m\($0)"), in: lobby.id, by: alice) }
        let store = try Fixtures.store(partitions: [lobby])
        #expect(try store.apply([ops[0], try zeroSigned(ops[1]), ops[2]], nowMillis: Fixtures.now()) == [.applied, .applied, .applied])
        #expect(try store.outbound.sendable([ops[0]], nowMillis: Fixtures.now()).ops == [ops[0]])
        let stored = try store.log.ops(in: lobby.id, author: alice.id, fromSeq: 2, limit: 1)
        #expect(try store.outbound.sendable(stored, nowMillis: Fixtures.now()).discarded?.seq == 2)
        #expect(try store.views.history(lobby.id).map(\.text) == ["m1"])
    }

    @Test func anExport_writesOnlyOpsWhoseSignaturesVerify_andAnImportChecksEveryOne() throws {
        var factory = OpFactory()
        let ops = (1...5).map { factory.make(post("m\($0)"), in: lobby.id, by: alice) }
        let store = try Fixtures.store(partitions: [lobby])
        #expect(try store.apply([ops[0], ops[1], try zeroSigned(ops[2]), ops[3], ops[4]], nowMillis: Fixtures.now()).allSatisfy { $0 == .applied })
        var bytes: [UInt8] = []
        let summary = try OpArchiver(store).export([lobby.id], to: try OpArchive.Writer { bytes += $0 }, nowMillis: Fixtures.now())
        #expect(summary == OpArchiver.ExportSummary(ops: 2, withheld: 3))

        // A file whose ops were zeroed but for the last of the run is refused op by op.
        var poisonedBytes: [UInt8] = []
        let writer = try OpArchive.Writer { poisonedBytes += $0 }
        try writer.write(.partition(lobby))
        for (index, op) in ops.enumerated() { try writer.write(.operation(index == ops.count - 1 ? op : try zeroSigned(op))) }
        try writer.finish()
        let fresh = try Fixtures.store(partitions: [])
        var offset = 0
        let reader = try OpArchive.Reader { count in
            defer { offset = min(poisonedBytes.count, offset + count) }
            return Array(poisonedBytes[offset..<min(poisonedBytes.count, offset + count)])
        }
        let imported = try OpArchiver(fresh).importArchive(reader, me: bob.id, nowMillis: Fixtures.now())
        #expect(imported.applied == 0)
        #expect(imported.refused == 5)
        #expect(try fresh.log.opCount(lobby.id) == 0)
    }

    @Test func sendable_checksTheTail_andDropsABadOpWithTheChainAfterIt() throws {
        var factory = OpFactory()
        let ops = (1...4).map { factory.make(post("m\($0)"), in: lobby.id, by: alice) }
        let store = try Fixtures.store(partitions: [lobby])
        // Good, good, bad, good: all stored on alice's link's word.
        for (index, op) in ops.enumerated() {
            #expect(try apply(index == 2 ? try badlySigned(op) : op, store, over: alice.id) == .applied)
        }
        #expect(try store.views.history(lobby.id).map(\.text) == ["m1", "m2", "m3", "m4"])
        let stored = try store.log.ops(in: lobby.id, author: alice.id, fromSeq: 1, limit: 100)
        let (sendable, discarded) = try store.outbound.sendable(stored, nowMillis: Fixtures.now())
        #expect(sendable.map(\.seq) == [1, 2])
        #expect(discarded?.seq == 3)
        #expect(try store.log.opCount(lobby.id) == 2)
        #expect(try store.views.history(lobby.id).map(\.text) == ["m1", "m2"])
        #expect(try store.log.heads(lobby.id).map(\.maxSeq) == [2])
        // The places are free for the good ops, which take the ordinary path.
        #expect(try store.apply(Array(ops[2...]), nowMillis: Fixtures.now()) == [.applied, .applied])
        #expect(try store.views.history(lobby.id).map(\.text) == ["m1", "m2", "m3", "m4"])
    }

    @Test func aGoodlySignedOp_replacesABadlySignedOneHeldOnTheLinksWord_withoutAForkProof() throws {
        var factory = OpFactory()
        let good = factory.make(post("first"), in: lobby.id, by: alice)
        var other = OpFactory()
        let conflicting = other.make(post("another first"), in: lobby.id, by: alice)
        let store = try Fixtures.store(partitions: [lobby])
        #expect(try apply(try badlySigned(conflicting), store, over: alice.id) == .applied)
        #expect(try store.apply(good, nowMillis: Fixtures.now()) == .applied)
        #expect(try store.log.forkProofs(lobby.id).isEmpty)
        #expect(try store.views.history(lobby.id).map(\.text) == ["first"])
        #expect(try store.log.heads(lobby.id).first?.frozenAt == nil)
    }

    @Test func theTail_outlivesReopeningTheStore() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-tail-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var factory = OpFactory()
        let op = factory.make(post("held"), in: lobby.id, by: alice)
        do {
            let store = try ReplicaStore(path: directory + "/store.db")
            try store.log.ensurePartition(lobby, joined: true)
            #expect(try apply(try badlySigned(op), store, over: alice.id) == .applied)
        }
        let reopened = try ReplicaStore(path: directory + "/store.db")
        let stored = try reopened.log.ops(in: lobby.id, author: alice.id, fromSeq: 1, limit: 10)
        #expect(try reopened.outbound.sendable(stored, nowMillis: Fixtures.now()).discarded?.seq == 1)
        #expect(try reopened.log.opCount(lobby.id) == 0)
    }
}
