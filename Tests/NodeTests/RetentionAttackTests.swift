import Foundation
import Gossip
import Identity
import LinkProtocol
import Replica
import Store
import TestSupport
import Testing

@testable import NodeRuntime

/// A room's retention cannot be used by a peer to drop a body (docs/ARCHITECTURE.md,
/// *Retention*): an op that arrives without its body is taken only when the receiver sees it
/// outside the window too.
@Suite struct RetentionAttackTests {
    static let room = PartitionDescriptor.room(RoomName("keep")!)

    /// Serves one author's chain in `keep` with every op's body left out, as if all had expired.
    final class HeaderOnlyServer: LinkMessageHandler {
        let ops: [Replica.Operation]

        init(_ ops: [Replica.Operation]) { self.ops = ops }

        var syncHello: SyncHello? { GossipConfiguration().hello }

        func send(_ message: SyncMessage, to peer: LinkPeer, node: isolated Node) {
            let bytes = message.encode()
            node.send(SyncFrame(type: bytes[0], payload: Array(bytes[1...])), to: peer.id)
        }

        func offer(to peer: LinkPeer, node: isolated Node) {
            let head = Head(author: ops[0].author, maxSeq: ops.last!.seq, headID: ops.last!.id)
            send(.summary(more: false, entries: [SummaryEntry(room, digest: PartitionDigest(heads: [head]), revealDescriptor: true)]), to: peer, node: node)
            send(.vector(partition: room.id, more: false, heads: [head]), to: peer, node: node)
        }

        func linkOpened(_ peer: LinkPeer, node: isolated Node) { offer(to: peer, node: node) }

        func received(_ frame: SyncFrame, from peer: LinkPeer, node: isolated Node) throws(LinkViolation) {
            switch try? SyncMessage.decode([frame.type] + frame.payload) {
            case .want(_, _, let fromSeq, let count):
                let served = ops.filter { $0.seq >= fromSeq }.prefix(Int(count)).map { try! Replica.Operation(expiredHeader: $0.header) }
                send(.ops(OpBatch(partition: room.id, author: ops[0].author, ops: served, isLast: true)), to: peer, node: node)
            case .summary:
                offer(to: peer, node: node)
            default:
                break
            }
        }

        func linkClosed(_ peer: LinkPeer, node: isolated Node) {}
    }

    @Test func aPeerServingHeadersInsideTheWindow_isRefused_andTheWordsComeWholeFromAnHonestPeer() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        let victim = Fixtures.identity(80), honest = Fixtures.identity(81), hostile = Fixtures.identity(82), writer = Fixtures.identity(83)
        // The victim owns #keep: the last 3 messages. The writer wrote five; the last three are inside.
        var factory = OpFactory()
        let policy = factory.make(.roomPolicy(RoomPolicy(retention: .lastMessages(3))), in: Self.room.id, by: victim)
        let posts = (1...5).map { factory.make(post("word \($0)"), in: Self.room.id, by: writer, hlcOffset: Int64($0) * 1_000) }
        try nodes.prepare(["victim", "honest"], joining: Self.room)
        for name in ["victim", "honest"] {
            #expect(try nodes.withStore(name) { try $0.apply([policy], nowMillis: Fixtures.now(60_000)) } == [.applied])
        }
        #expect(try nodes.withStore("honest") { try $0.apply(posts, nowMillis: Fixtures.now(60_000)) }.allSatisfy { $0 == .applied })

        let victimLog = LogLines()
        let (victimNode, victimAddress) = try await nodes.start(nodes.configuration("victim"), identity: victim, log: victimLog.log(.info))
        var hostileConfiguration = nodes.configuration("hostile")
        hostileConfiguration.staticPeers = [InProcessNodes.peer(victim, at: victimAddress)]
        let (hostileNode, _) = try await nodes.start(hostileConfiguration, identity: hostile, handler: HeaderOnlyServer(posts))

        // The first two are outside the window by the victim's own view (three later posts came
        // with them, signed): taken without their words. The third is inside: refused, held
        // (were it taken, its words would never arrive: the honest peer's whole copy below
        // would be a duplicate of the header).
        let stored = await eventually { nodes.opCount("victim", Self.room.id) == 3 }
        #expect(stored, "\(victimLog.all)")
        let held = try nodes.withStore("victim") { store in
            try store.log.ops(in: Self.room.id, author: writer.id, fromSeq: 1, limit: 10)
        }
        #expect(held.map(\.seq) == [1, 2] && held.allSatisfy(\.isExpired), "\(held.map { ($0.seq, $0.isExpired) })")
        await hostileNode.stop()

        // An honest peer serves the same chain (the first two without their words, as it
        // dropped them too): the victim ends with the last three whole.
        var honestConfiguration = nodes.configuration("honest")
        honestConfiguration.staticPeers = [InProcessNodes.peer(victim, at: victimAddress)]
        _ = try await nodes.start(honestConfiguration, identity: honest)
        let whole = await eventually {
            (try? nodes.withStore("victim") { try $0.views.history(Self.room.id).map(\.text) }) == ["word 3", "word 4", "word 5"]
        }
        #expect(whole, "\(victimLog.all)")
        #expect(await victimNode.linkedPeers.contains(honest.id))
        await nodes.stopAll()
    }
}
