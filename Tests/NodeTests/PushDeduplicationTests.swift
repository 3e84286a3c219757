import Discovery
import Foundation
import Gossip
import Identity
import Replica
import Store
import TestSupport
import Testing

@testable import NodeRuntime

/// Live push control in a full mesh of four `Node` actors (issue 9): after a warm-up each op
/// reaches each node about once (not once per peer), and when a chain's pusher link is cut in the
/// middle of a stream, RESUME makes the other peers push it, so every node converges without
/// waiting for anti-entropy.
@Suite struct PushDeduplicationTests {
    let identities = (0..<4).map { Fixtures.identity(UInt8(90 + $0)) }

    /// Four nodes, each linked to every other (static peers), all in #lobby. Anti-entropy is an
    /// hour apart, so only live pushes (and the WANTs a gap in them triggers) move ops.
    func mesh(_ nodes: InProcessNodes) async throws -> [Node] {
        var started: [Node] = []
        var addresses: [StaticPeer] = []
        for (index, identity) in identities.enumerated() {
            let name = "n\(index)"
            var configuration = nodes.configuration(name)
            configuration.gossip.antiEntropyInterval = 3_600_000
            configuration.staticPeers = addresses
            try nodes.withStore(name) { try $0.log.ensurePartition(lobby, joined: true) }
            let (node, address) = try await nodes.start(configuration, identity: identity)
            started.append(node)
            addresses.append(InProcessNodes.peer(identity, at: address))
        }
        var linked = true
        for node in started { linked = await eventually { await node.linkedPeers.count == 3 } && linked }
        #expect(linked, "the mesh did not link")
        return started
    }

    func write(_ node: Node, _ text: String) async {
        let response = await node.author(AuthorRequest(kind: "post", room: "lobby", text: text))
        #expect(response.author != nil, "\(response)")
    }

    func received(_ nodes: [Node]) async -> UInt64 {
        var total: UInt64 = 0
        for node in nodes { total += await node.status().sync.opsReceived }
        return total
    }

    /// Whether every op any node sent (pushed or in OPS) has reached its peer, and no WANT waits
    /// for an answer: both ends of each link count the same ops, and nothing more is on its way.
    func settled(_ nodes: [Node]) async -> Bool {
        var (sent, received, wants): (UInt64, UInt64, UInt64) = (0, 0, 0)
        for node in nodes {
            let sync = await node.status().sync
            (sent, received, wants) = (sent + sync.opsSent, received + sync.opsReceived, wants + sync.wantsOutstanding)
        }
        return sent == received && wants == 0
    }

    func converged(_ nodes: InProcessNodes, count: Int, names: [String]) async -> Bool {
        await eventually(.seconds(30)) { names.allSatisfy { nodes.opCount($0, lobby.id) == count } }
    }

    @Test func fullMesh_afterAWarmUp_receivesEachOpAboutOncePerNode() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        let mesh = try await mesh(nodes)
        let names = (0..<4).map { "n\($0)" }
        // Warm-up: relays push duplicates and are asked to skip.
        for round in 0..<15 {
            for (index, node) in mesh.enumerated() { await write(node, "warm-up \(round) from \(index)") }
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(await converged(nodes, count: 60, names: names))
        #expect(await eventually { await settled(mesh) }, "warm-up copies still in flight")
        let before = await received(mesh)
        let rounds = 40
        for round in 0..<rounds {
            for (index, node) in mesh.enumerated() { await write(node, "measured \(round) from \(index)") }
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(await converged(nodes, count: 60 + 4 * rounds, names: names))
        #expect(await eventually { await settled(mesh) }, "measured copies still in flight")
        let copies = Double(await received(mesh) - before) / Double(4 * rounds * 3)
        print("each op reached each node \(copies) times")
        // Without push control every op arrives from the author and from most relays (2 to 3).
        #expect(copies < 1.2, "each op reached each node \(copies) times")
        await nodes.stopAll()
    }

    @Test func pusherLinkCut_midStream_theOthersResume_andAllConverge() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        let mesh = try await mesh(nodes)
        let names = (0..<4).map { "n\($0)" }
        let (author, cut) = (mesh[0], mesh[1])
        for index in 0..<30 { await write(author, "before \(index)") }
        #expect(await converged(nodes, count: 30, names: names))
        // The author is n1's pusher of its chain; the relays n2 and n3 were asked to skip it.
        for relay in mesh[2...] {
            let skipped = await eventually {
                await relay.status().sync.peers.contains { $0.id == identities[1].id.text && $0.skipsReceived > 0 }
            }
            #expect(skipped, "a relay was not asked by n1 to skip the author's chain")
        }
        // Cut the author from n1 (both sides, as a split does) while it keeps writing.
        for index in 0..<60 {
            if index == 20 {
                _ = await author.applyFaults(FaultSettings(blockedPeers: [identities[1].id.text]))
                _ = await cut.applyFaults(FaultSettings(blockedPeers: [identities[0].id.text]))
            }
            await write(author, "stream \(index)")
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await eventually { await !cut.linkedPeers.contains(identities[0].id) })
        // Anti-entropy is an hour away: only RESUME (the vector round it starts, and the WANTs
        // its first pushes trigger) can bring n1 the rest.
        #expect(await converged(nodes, count: 90, names: names), "n1 holds \(nodes.opCount("n1", lobby.id)) of 90")
        let digests = try names.map { name in try nodes.withStore(name) { try $0.log.digest(lobby.id) } }
        #expect(Set(digests.map(\.raw)).count == 1)
        await nodes.stopAll()
    }
}
