import Foundation
import Gossip
import Identity
import Replica
import Store
import TestSupport
import Testing

@testable import NodeRuntime

/// The Gossip shell in two `Node` actors linked over loopback: what was written before the link
/// arrives at link-up, a poked write is pushed live, a bulk write goes by WANT, a room joined
/// while running starts to sync, and status counts it all.
@Suite struct SyncInProcessTests {
    let alice = Fixtures.identity(70), bob = Fixtures.identity(71), carol = Fixtures.identity(72)

    @Test func pair_syncsAtLinkUp_pushesPokedWrites_fetchesABulkWrite_andSyncsARoomJoinedLater() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        _ = nodes.configuration("alice")
        _ = nodes.configuration("bob")
        try nodes.withStore("alice") { store in
            try store.log.ensurePartition(lobby, joined: true)
            for index in 0..<30 { try store.author(post("before \(index)"), in: lobby.id, by: alice, nowMillis: Fixtures.now()) }
        }
        try nodes.withStore("bob") { try $0.log.ensurePartition(lobby, joined: true) }

        // No anti-entropy round during the test: a round that lists alice's summary between a
        // command's commit and her node's push would have bob fetch that op instead, and this
        // test counts what was pushed and what was fetched. Nothing here waits for a round.
        func configuration(_ name: String) -> NodeConfiguration {
            var configuration = nodes.configuration(name)
            configuration.gossip.antiEntropyInterval = 600_000
            return configuration
        }
        let aliceLog = LogLines()
        let (aliceNode, aliceAddress) = try await nodes.start(configuration("alice"), identity: alice, log: aliceLog.log())
        var bobConfiguration = configuration("bob")
        bobConfiguration.staticPeers = [InProcessNodes.peer(alice, at: aliceAddress)]
        let bobLog = LogLines()
        let (bobNode, _) = try await nodes.start(bobConfiguration, identity: bob, log: bobLog.log())

        func bobSync() async -> SyncStatus { await bobNode.status().sync }
        let linkedUp = await eventually { nodes.opCount("bob", lobby.id) == 30 }
        #expect(linkedUp, "\(bobLog.all)")
        #expect(await eventually { await bobSync().fetched == 30 })
        var sync = await bobSync()
        #expect(sync.wanted == 30 && sync.opsReceived == 30, "\(sync)")
        #expect(sync.peers.map(\.id) == [alice.id.text])
        #expect((sync.peers.first?.bytesReceived ?? 0) > 30 * 216, "the link's bytes are counted: \(sync)")

        // A command writes and pokes: pushed live, one NEW_OP each.
        try nodes.withStore("alice") { store in
            for index in 0..<2 { try store.author(post("live \(index)"), in: lobby.id, by: alice, nowMillis: Fixtures.now()) }
        }
        // The node's own check (every 50 ms here) may find them before the poke does on a loaded
        // machine; either way they go out live (PushPacingTests counts pokes with the check off).
        let poked = await aliceNode.respond(to: ControlRequest(.poke)).poke?.ops
        #expect(poked.map { (0...2).contains($0) } == true, "poke found \(String(describing: poked))")
        #expect(await eventually { nodes.opCount("bob", lobby.id) == 32 })
        sync = await bobSync()
        #expect(sync.fetched == 30 && sync.opsReceived == 32, "pushed, not fetched: \(sync)")

        // An import-sized write (more than livePushLimit at once) goes out as a changed summary,
        // and bob fetches it with WANTs; nobody pokes: the node's data_version check notices.
        var factory = OpFactory()
        let bulk = (0..<(GossipHandler.livePushLimit + 100)).map { factory.make(post("bulk \($0)"), in: lobby.id, by: carol) }
        try nodes.withStore("alice") { store in _ = try store.apply(bulk, nowMillis: Fixtures.now()) }
        #expect(await eventually { nodes.opCount("bob", lobby.id) == 32 + bulk.count }, "\(aliceLog.all.suffix(5))")
        sync = await bobSync()
        #expect(sync.fetched == UInt64(30 + bulk.count) && sync.wanted == sync.fetched, "\(sync)")
        #expect(sync.opsReceived == UInt64(32 + bulk.count), "exactly the missing ops, once: \(sync)")
        #expect(bobLog.contains("fetching: ") && bobLog.contains("ops fetched"), "long fetches are logged: \(bobLog.all)")

        // A room both join while running (bob first): once alice lists it too, it syncs.
        try nodes.withStore("bob") { try $0.log.ensurePartition(.room(RoomName("kitchen")!), joined: true) }
        _ = await bobNode.respond(to: ControlRequest(.poke))
        let kitchen = PartitionDescriptor.room(RoomName("kitchen")!)
        try nodes.withStore("alice") { store in
            try store.log.ensurePartition(kitchen, joined: true)
            for index in 0..<3 { try store.author(post("kitchen \(index)"), in: kitchen.id, by: alice, nowMillis: Fixtures.now()) }
        }
        _ = await aliceNode.respond(to: ControlRequest(.poke))
        #expect(await eventually { nodes.opCount("bob", kitchen.id) == 3 })
        let digests = try ["alice", "bob"].map { name in try nodes.withStore(name) { store in try [lobby.id, kitchen.id].map { try store.log.digest($0) } } }
        #expect(digests[0] == digests[1])
        await nodes.stopAll()
    }
}
