import Foundation
import Gossip
import Identity
import Replica
import Store
import TestSupport
import Testing

@testable import NodeRuntime

/// The sender's side of the per-author push limit (issue 10): a burst of local writes larger
/// than the pace is pushed up to the pace, and the peer fetches the rest with WANTs (a vector
/// round shows it what it lacks), so a bulk write still converges promptly and the honest
/// sender is never taken for a flood.
@Suite struct PushPacingTests {
    let alice = Fixtures.identity(96), bob = Fixtures.identity(97)

    @Test func bulkWriteOf20000Posts_isPacedThenFetched_andConverges() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        try nodes.prepare(["alice", "bob"], joining: lobby)
        // Anti-entropy an hour apart: only pushes and the vector rounds pacing starts move ops.
        // The limit is a tenth of the default (the pace: 80/s, burst 800), so the writes outrun
        // it however fast this machine signs them.
        let rate = OpRate(perSecond: 100, burst: 1_000)
        var aliceConfiguration = nodes.configuration("alice")
        aliceConfiguration.gossip.antiEntropyInterval = 3_600_000
        aliceConfiguration.gossip.authorPushRate = rate
        aliceConfiguration.localWritePollInterval = 3_600_000  // only the pokes hand the writes over
        let (aliceNode, aliceAddress) = try await nodes.start(aliceConfiguration, identity: alice)
        var bobConfiguration = nodes.configuration("bob")
        bobConfiguration.gossip.antiEntropyInterval = 3_600_000
        bobConfiguration.gossip.authorPushRate = rate
        bobConfiguration.staticPeers = [InProcessNodes.peer(alice, at: aliceAddress)]
        let bobLog = LogLines()
        let (bobNode, _) = try await nodes.start(bobConfiguration, identity: bob, log: bobLog.log(.warn))
        #expect(await eventually { await bobNode.linkedPeers == [alice.id] })

        // 20,000 posts, handed to the node 1,000 at a time (each under the live-push limit, so
        // they are pushed one by one rather than announced by summary).
        let total = 20_000
        let started = ContinuousClock.now
        for batch in 0..<(total / 1_000) {
            try nodes.withStore("alice") { store in
                _ = try store.authorAll((0..<1_000).map { post("bulk \(batch) \($0)") }, in: lobby.id, by: alice, nowMillis: Fixtures.now())
            }
            #expect(await aliceNode.respond(to: ControlRequest(.poke)).poke == PokeReport(ops: 1_000))
        }
        let converged = await eventually(.seconds(120)) { nodes.opCount("bob", lobby.id) == total }
        #expect(converged, "bob holds \(nodes.opCount("bob", lobby.id)) of \(total)")
        let seconds = UInt64((ContinuousClock.now - started).components.seconds + 1)
        let sync = await bobNode.status().sync
        let pace = rate.scaled(by: GossipConfiguration().pushPacing)
        #expect(sync.fetched > 0, "the rest was fetched: \(sync)")
        #expect(sync.opsReceived - sync.fetched <= pace.burst + pace.perSecond * seconds, "pushed at most the pace allows: \(sync)")
        #expect(await bobNode.linkedPeers == [alice.id], "the honest sender was not taken for a flood: \(bobLog.all)")
        await nodes.stopAll()
    }
}
