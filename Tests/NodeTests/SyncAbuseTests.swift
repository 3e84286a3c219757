import Foundation
import Gossip
import Identity
import LinkProtocol
import Replica
import Store
import TestSupport
import Testing
import Wire

@testable import NodeRuntime

/// Issue 10 (abuse), in process: a linked peer that sends the largest SUMMARY and VECTOR pages
/// the protocol allows, wave after wave. They are valid messages, so it is not banned; what
/// matters is that the node stays responsive to an honest peer meanwhile (each honest op is
/// timed from write to arrival while a wave is in flight, and the latencies are printed) and
/// that nothing of the flood is stored.
@Suite struct SyncAbuseTests {
    /// Lists the lobby at link-up, so that its VECTOR pages are part of an exchange.
    final class ListsTheLobby: LinkMessageHandler {
        var syncHello: SyncHello? { GossipConfiguration().hello }

        func linkOpened(_ peer: LinkPeer, node: isolated Node) {
            let bytes = SyncMessage.summary(more: false, entries: [SummaryEntry(lobby, digest: PartitionDigest(heads: []), revealDescriptor: true)]).encode()
            node.send(SyncFrame(type: bytes[0], payload: Array(bytes[1...])), to: peer.id)
        }

        func received(_ frame: SyncFrame, from peer: LinkPeer, node: isolated Node) throws(LinkViolation) {}
        func linkClosed(_ peer: LinkPeer, node: isolated Node) {}
    }

    /// One wave: 2 full SUMMARY pages of partitions nobody has (4,096 entries, 266 KB each)
    /// and 2 full VECTOR pages of made-up authors for the lobby (1,024 heads, 82 KB each).
    static func wave(_ random: inout SeededRandom) -> [SyncFrame] {
        func bytes32() -> Bytes32 { Bytes32((0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })! }
        var messages: [SyncMessage] = []
        for _ in 0..<2 {
            let entries = (0..<SyncMessage.maxSummaryEntries).map { _ in SummaryEntry(partition: PartitionID(bytes32()), digest: bytes32(), descriptor: nil) }
            messages.append(.summary(more: true, entries: entries))
        }
        for _ in 0..<2 {
            let heads = (0..<SyncMessage.maxVectorHeads).map { index in Head(author: UserID(bytes32()), maxSeq: UInt64(index + 1), headID: OpID(bytes32())) }
            messages.append(.vector(partition: lobby.id, more: true, heads: heads))
        }
        return messages.map { message in
            let bytes = message.encode()
            return SyncFrame(type: bytes[0], payload: Array(bytes[1...]))
        }
    }

    @Test func enormousSummariesAndVectors_leaveTheHonestPeerSyncing_andStoreNothing() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        let victim = Fixtures.identity(70), honest = Fixtures.identity(71), hostile = Fixtures.identity(72)
        try nodes.prepare(["victim", "honest"], joining: lobby)
        let (victimNode, victimAddress) = try await nodes.start(nodes.configuration("victim"), identity: victim)
        var honestConfiguration = nodes.configuration("honest")
        honestConfiguration.staticPeers = [InProcessNodes.peer(victim, at: victimAddress)]
        let (honestNode, _) = try await nodes.start(honestConfiguration, identity: honest)
        var hostileConfiguration = nodes.configuration("hostile")
        hostileConfiguration.staticPeers = [InProcessNodes.peer(victim, at: victimAddress)]
        let (hostileNode, _) = try await nodes.start(hostileConfiguration, identity: hostile, handler: ListsTheLobby())
        let linked = await eventually { Set(await victimNode.linkedPeers).isSuperset(of: [honest.id, hostile.id]) }
        guard linked else {
            await nodes.stopAll()
            Issue.record("the peers did not link")
            return
        }

        // Each honest op is written and pushed right after a wave (about 700 KB) is queued.
        var random = SeededRandom(seed: 10)
        var latencies: [Duration] = []
        var wavesSent = 0
        for index in 0..<8 {
            for frame in Self.wave(&random) where await hostileNode.send(frame, to: victim.id) { wavesSent += 1 }
            try nodes.withStore("honest") { store in _ = try store.author(post("honest \(index)"), in: lobby.id, by: honest, nowMillis: Fixtures.now()) }
            let start = ContinuousClock.now
            _ = await honestNode.respond(to: ControlRequest(.poke))
            let arrived = await eventually { nodes.opCount("victim", lobby.id) == index + 1 }
            #expect(arrived, "honest op \(index) did not arrive during the attack")
            guard arrived else { break }
            latencies.append(ContinuousClock.now - start)
        }
        let sorted = latencies.sorted()
        if let last = sorted.last {
            print("SyncAbuseTests: \(wavesSent) full pages sent; honest op latency meanwhile: p50 \(sorted[sorted.count / 2]), max \(last)")
        }
        #expect(wavesSent == 8 * 4, "the hostile link closed during the attack")
        #expect(await victimNode.linkedPeers.contains(honest.id), "the honest peer lost its link")
        #expect(nodes.opCount("victim", lobby.id) == 8, "only the honest ops are stored")
        await nodes.stopAll()
    }
}
