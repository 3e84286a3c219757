import Identity
import Replica
import Store
import TestSupport
import Testing
import Wire

@testable import Gossip

/// A peer that breaks the protocol loses its link (`.close`), and private partitions never
/// reach a peer they were not offered to.
@Suite struct SyncViolationTests {
    let me = Fixtures.identity(10)
    let stranger = Fixtures.identity(11)
    let mallory = Fixtures.identity(3)

    /// A node holding the lobby (and whatever else), started on a link to the stranger.
    func node(_ partitions: [PartitionDescriptor] = [lobby], configuration: GossipConfiguration = GossipConfiguration()) throws -> TestNode {
        let node = TestNode("B", identity: me, store: try Fixtures.store(partitions: partitions), peer: stranger.id, configuration: configuration)
        try node.start()
        return node
    }

    /// The stranger lists the lobby with `digest` (holding it too).
    func listLobby(_ node: TestNode, digest: PartitionDigest) throws {
        try node.receive(SyncMessage.summary(more: false, entries: [SummaryEntry(lobby, digest: digest, revealDescriptor: false)]).encode())
    }

    func forged(_ op: Operation) -> Operation {
        var header = op.header
        header[200] ^= 0x01
        return try! Operation(header: header, body: op.body)
    }

    /// `op` with its body changed: the header no longer matches it.
    func mismatched(_ op: Operation) -> Operation {
        var body = op.body
        body[0] ^= 0x01
        return try! Operation(header: op.header, body: body)
    }

    @Test func invalidOps_countAgainstThePeer_untilItIsClosed() throws {
        var configuration = GossipConfiguration()
        configuration.maxInvalidOps = 3
        let node = try node(configuration: configuration)
        try listLobby(node, digest: try node.store.log.digest(lobby.id))
        var factory = OpFactory()
        for index in 0..<4 {
            let op = mismatched(factory.make(post("changed"), in: lobby.id, by: Fixtures.identity(UInt8(40 + index))))
            try node.receive(SyncMessage.newOp(op).encode())
            #expect(node.closedWith == (index < 3 ? nil : .tooManyInvalidOps(4)))
        }
        #expect(try node.store.log.opCount(lobby.id) == 0)
        #expect(node.closedWith?.isViolation == true)
    }

    /// An honest node checks every signature before it sends an op, so the first forged one
    /// closes the link.
    @Test func aForgedOp_closesTheLinkAtOnce() throws {
        let node = try node()
        try listLobby(node, digest: try node.store.log.digest(lobby.id))
        var factory = OpFactory()
        let op = forged(factory.make(post("forged"), in: lobby.id, by: Fixtures.identity(40)))
        try node.receive(SyncMessage.newOp(op).encode())
        #expect(node.closedWith == .badSignature(lobby.id, author: Fixtures.identity(40).id, seq: 1))
        #expect(node.closedWith?.isViolation == true)
        #expect(try node.store.log.opCount(lobby.id) == 0)
    }

    @Test func forgedOpsInAnAnswer_areRejected_andCloseTheLink() throws {
        let node = try node()
        var factory = OpFactory()
        let ops = (0..<3).map { factory.make(post("\($0)"), in: lobby.id, by: mallory) }
        let bad = ops.dropLast() + [forged(ops[2])]
        try listLobby(node, digest: PartitionDigest(heads: [Head(author: mallory.id, maxSeq: 3, headID: ops[2].id)]))
        try node.receive(SyncMessage.vector(partition: lobby.id, more: false, heads: [Head(author: mallory.id, maxSeq: 3, headID: ops[2].id)]).encode())
        #expect(node.sent.last == .want(partition: lobby.id, author: mallory.id, fromSeq: 1, maxCount: 3))
        try node.receive(SyncMessage.ops(OpBatch(partition: lobby.id, author: mallory.id, ops: Array(bad), isLast: true)).encode())
        // The chain's one signature check fails, so each op is checked alone: two are good.
        #expect(try node.store.log.opCount(lobby.id) == 2)
        #expect(node.closedWith == .badSignature(lobby.id, author: mallory.id, seq: 3))
    }

    @Test func opsBeyondTheCredit_closeTheLink() throws {
        let node = try node()
        var factory = OpFactory()
        let ops = (0..<11).map { factory.make(post("\($0)"), in: lobby.id, by: mallory) }
        let head = Head(author: mallory.id, maxSeq: 10, headID: ops[9].id)
        try listLobby(node, digest: PartitionDigest(heads: [head]))
        try node.receive(SyncMessage.vector(partition: lobby.id, more: false, heads: [head]).encode())
        #expect(node.sent.last == .want(partition: lobby.id, author: mallory.id, fromSeq: 1, maxCount: 10))
        try node.receive(SyncMessage.ops(OpBatch(partition: lobby.id, author: mallory.id, ops: ops, isLast: true)).encode())
        #expect(node.closedWith == .creditExceeded(lobby.id, author: mallory.id))
        #expect(try node.store.log.opCount(lobby.id) == 0)
    }

    @Test func opsNeverAskedFor_closeTheLink() throws {
        let node = try node()
        try listLobby(node, digest: .empty)
        var factory = OpFactory()
        let op = factory.make(post("unasked"), in: lobby.id, by: mallory)
        try node.receive(SyncMessage.ops(OpBatch(partition: lobby.id, author: mallory.id, ops: [op], isLast: true)).encode())
        #expect(node.closedWith == .unrequestedOps(lobby.id, author: mallory.id))
        #expect(try node.store.log.opCount(lobby.id) == 0)
    }

    @Test func opsForAPartitionNotOffered_closeTheLink() throws {
        var factory = OpFactory()
        let push = try node()
        try push.receive(SyncMessage.newOp(factory.make(post("hi"), in: kitchen.id, by: mallory)).encode())
        #expect(push.closedWith == .partitionNotOffered(kitchen.id))

        let batch = try node()
        let op = factory.make(post("hi"), in: kitchen.id, by: mallory)
        try batch.receive(SyncMessage.ops(OpBatch(partition: kitchen.id, author: mallory.id, ops: [op], isLast: true)).encode())
        #expect(batch.closedWith == .partitionNotOffered(kitchen.id))
    }

    @Test func garbage_closesTheLink() throws {
        for frame: [UInt8] in [[], [0x42, 1, 2], [0x04, 1, 2, 3], [0x02, 0x00, 0xFF, 0xFF]] {
            let node = try node()
            try node.receive(frame)
            guard case .malformedMessage = node.closedWith else {
                Issue.record("\(frame): \(String(describing: node.closedWith))")
                continue
            }
            #expect(node.closedWith?.isViolation == true)
        }
        // A reserved type (a later feature) is not garbage.
        let node = try node()
        try node.receive([SyncMessageType.presence.rawValue, 1, 2, 3])
        #expect(node.closedWith == nil)
    }

    @Test func wantForAPrivatePartitionNotOffered_closes_andSendsNothingOfIt() throws {
        // B holds a conversation the stranger is not a member of, and its own `self` partition.
        let conversation = PartitionDescriptor.conversation(creator: me.id, nonce: Bytes32(w0: 7, w1: 7, w2: 7, w3: 7))
        let ownData = PartitionDescriptor.ownData(owner: me.id)
        for partition in [conversation, ownData] {
            let node = try node([lobby, conversation, ownData])
            try node.store.author(.conversationCreate(name: "private", members: [me.id]), in: conversation.id, by: me, nowMillis: Fixtures.now())
            let listed = node.sent.flatMap { message -> [PartitionID] in if case .summary(_, let entries) = message { entries.map(\.partition) } else { [] } }
            #expect(!listed.contains(partition.id))
            try node.receive(SyncMessage.want(partition: partition.id, author: me.id, fromSeq: 1, maxCount: 256).encode())
            #expect(node.closedWith == .partitionNotOffered(partition.id))
            #expect(node.opsSentInBatches == 0)
        }
    }

    @Test func wantForARoomThePeerDidNotList_isAnsweredEmpty() throws {
        let node = try node([lobby])
        try node.store.author(post("room talk"), in: lobby.id, by: me, nowMillis: Fixtures.now())
        // The stranger saw the lobby's id in B's summary but never listed it: it did not join.
        try node.receive(SyncMessage.want(partition: lobby.id, author: me.id, fromSeq: 1, maxCount: 256).encode())
        #expect(node.sent.last == .ops(OpBatch(partition: lobby.id, author: me.id, ops: [], isLast: true)))
        #expect(node.closedWith == nil)
    }

    /// Version 1 peers cannot read erased ops (OPS) nor deletes that name edits to erase; version
    /// 2 peers neither room policy ops nor expired ops.
    @Test func aPeerWithTooSmallFrames_orAVersionBefore3_isClosedAtStart_withoutAViolation() {
        let summary = PartitionSummary(descriptor: lobby, digest: .empty, sharing: .ifPeerHolds)
        let hellos = [
            SyncHello(protocolVersion: GossipConfiguration.protocolVersion, maxFrame: 4_096, features: 0),
            SyncHello(protocolVersion: 0, maxFrame: 1 << 20, features: 0), SyncHello(protocolVersion: 1, maxFrame: 1 << 20, features: 0),
            SyncHello(protocolVersion: 2, maxFrame: 1 << 20, features: 0),
        ]
        for hello in hellos {
            var session = GossipSession()
            let directives = session.start(local: [summary], peer: hello, now: 0)
            guard case .incompatiblePeer = closeReason(directives) else {
                Issue.record("\(hello) was accepted")
                continue
            }
            #expect(messages(directives).isEmpty, "nothing is sent to an incompatible peer")
            #expect(closeReason(directives)?.isViolation == false)
            #expect(session.isClosed)
            #expect(session.onMessage(.summary(more: false, entries: []), now: 1).isEmpty)
        }
    }

    @Test func tooManyWantsWaiting_closeTheLink() {
        var configuration = GossipConfiguration()
        configuration.maxQueuedPeerWants = 2
        let summary = PartitionSummary(descriptor: lobby, digest: .empty, sharing: .ifPeerHolds)
        var session = startedSession([summary], configuration: configuration)
        _ = session.onMessage(.summary(more: false, entries: [SummaryEntry(lobby, digest: .empty, revealDescriptor: false)]), now: 0)
        // The first WANT is being served (its load is not answered); two wait; the fourth is one too many.
        for index in 0..<3 {
            let directives = session.onMessage(.want(partition: lobby.id, author: mallory.id, fromSeq: 1, maxCount: 1), now: 0)
            #expect(closeReason(directives) == nil, "WANT \(index)")
        }
        let directives = session.onMessage(.want(partition: lobby.id, author: mallory.id, fromSeq: 1, maxCount: 1), now: 0)
        #expect(closeReason(directives) == .tooManyWants)
    }
}
