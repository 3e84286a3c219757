import Foundation
import Identity
import Replica
import Store
import Synchronization
import TestSupport
import Testing

@testable import NodeRuntime

/// What user interfaces rely on: `Node.write` pushes at once and both nodes' subscribers hear of
/// it; a command's write from another process reaches a `watch` on the control socket; typing
/// reaches the members of a conversation and nobody else; presence follows the links.
@Suite struct InterfaceEventTests {
    let alice = Fixtures.identity(80), bob = Fixtures.identity(81), carol = Fixtures.identity(82)

    /// Events a subscription delivered, collected by a task.
    final class Collected: Sendable {
        private let events = Mutex<[NodeEvent]>([])
        private let task = Mutex<Task<Void, Never>?>(nil)

        init(_ stream: AsyncStream<NodeEvent>) {
            let collect = Task { [self] in
                for await event in stream { record(event) }
            }
            task.withLock { $0 = collect }
        }

        init(_ stream: AsyncThrowingStream<NodeEvent, any Error>) {
            let collect = Task { [self] in
                do {
                    for try await event in stream { record(event) }
                } catch {}
            }
            task.withLock { $0 = collect }
        }

        private func record(_ event: NodeEvent) { events.withLock { $0.append(event) } }
        var all: [NodeEvent] { events.withLock { $0 } }
        func contains(_ event: NodeEvent) -> Bool { all.contains(event) }
        func changed(_ partition: PartitionID) -> Bool {
            all.contains { if case .changed(let set) = $0 { set.contains(partition) } else { false } }
        }
        func cancel() { task.withLock { $0?.cancel() } }
    }

    /// Starts alice, then bob and carol dialing her; all in #lobby. Alice repeats TYPING at
    /// most once a minute, so a test can tell a repeat that was held back from a new one.
    func trio(_ nodes: InProcessNodes) async throws -> (alice: Node, bob: Node, carol: Node) {
        try nodes.prepare(["alice", "bob", "carol"], joining: lobby)
        var aliceConfiguration = nodes.configuration("alice")
        aliceConfiguration.typingRepeatInterval = 60_000
        let (aliceNode, address) = try await nodes.start(aliceConfiguration, identity: alice)
        var bobConfiguration = nodes.configuration("bob")
        bobConfiguration.staticPeers = [InProcessNodes.peer(alice, at: address)]
        let (bobNode, _) = try await nodes.start(bobConfiguration, identity: bob)
        var carolConfiguration = nodes.configuration("carol")
        carolConfiguration.staticPeers = [InProcessNodes.peer(alice, at: address)]
        let (carolNode, _) = try await nodes.start(carolConfiguration, identity: carol)
        return (aliceNode, bobNode, carolNode)
    }

    @Test func write_isPushedAtOnce_andEverySubscriberHearsOfIt_presenceFollowsLinks() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        let (aliceNode, bobNode, _) = try await trio(nodes)
        let aliceEvents = Collected(await aliceNode.events())
        let bobEvents = Collected(await bobNode.events())
        defer {
            aliceEvents.cancel()
            bobEvents.cancel()
        }
        #expect(await eventually { await aliceNode.linkedPeers.count == 2 })

        let presence = await aliceNode.livePresence()
        #expect(presence[bob.id]?.linked == true && presence[carol.id]?.linked == true, "\(presence)")

        let alice = self.alice
        let op = try await aliceNode.write { store in
            try store.author(post("hello from the web"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
        }
        #expect(await eventually { aliceEvents.changed(lobby.id) && bobEvents.changed(lobby.id) }, "\(bobEvents.all)")
        let bobHas = try await bobNode.read { store in try store.views.history(lobby.id, limit: nil).map(\.id) }
        #expect(bobHas == [op.id])

        // A room joined through the node is announced, and offered to peers at once.
        let kitchen = PartitionDescriptor.room(RoomName("kitchen")!)
        try await aliceNode.write { store in _ = try store.log.ensurePartition(kitchen, joined: true) }
        #expect(await eventually { aliceEvents.contains(.partitions) })

        // A read marker is an op of the user's own partition: unread counts follow it.
        let ownData = PartitionDescriptor.ownData(owner: alice.id).id
        try await aliceNode.write { store in
            try store.log.ensurePartition(.ownData(owner: alice.id), joined: true)
            _ = try store.author(.readMarker(partition: lobby.id, position: op.hlc), in: ownData, by: alice, nowMillis: Fixtures.now())
        }
        #expect(await eventually { aliceEvents.changed(ownData) })

        // Bob leaves: alice hears that presence changed, and he shows as not linked.
        await bobNode.stop()
        #expect(await eventually { await aliceNode.livePresence()[self.bob.id]?.linked != true })
        #expect(aliceEvents.contains(.presence))
        await nodes.stopAll()
    }

    @Test func typing_reachesConversationMembersOnly_andARoomsPeers() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        let (aliceNode, bobNode, carolNode) = try await trio(nodes)
        let bobEvents = Collected(await bobNode.events())
        let carolEvents = Collected(await carolNode.events())
        defer {
            bobEvents.cancel()
            carolEvents.cancel()
        }
        #expect(await eventually { await aliceNode.linkedPeers.count == 2 })

        await aliceNode.typing(in: lobby.id)
        #expect(await eventually { bobEvents.contains(.typing(partition: lobby.id, user: self.alice.id)) })
        #expect(await eventually { carolEvents.contains(.typing(partition: lobby.id, user: self.alice.id)) })

        // A conversation of alice and bob: bob hears alice typing there; carol is not told.
        let alice = self.alice, bob = self.bob
        let conversation = try await aliceNode.write { store in
            try store.createConversation(name: "plans", members: [bob.id], by: alice, nowMillis: Fixtures.now())
        }
        #expect(await eventually { (try? await bobNode.read { try $0.views.conversation(conversation.id)?.members.current }) == [alice.id, bob.id] })
        #expect(await aliceNode.typingAudience(in: conversation.id) == [bob.id])
        await aliceNode.typing(in: conversation.id)
        #expect(await eventually { bobEvents.contains(.typing(partition: conversation.id, user: alice.id)) })
        #expect(!carolEvents.all.contains { if case .typing(let partition, _) = $0 { partition == conversation.id } else { false } })

        // Repeats within the interval are not sent again.
        let count = bobEvents.all.filter { $0 == .typing(partition: lobby.id, user: alice.id) }.count
        await aliceNode.typing(in: lobby.id)
        await aliceNode.typing(in: conversation.id)
        #expect(await eventually { bobEvents.all.filter { $0 == .typing(partition: conversation.id, user: alice.id) }.count == 1 })
        #expect(bobEvents.all.filter { $0 == .typing(partition: lobby.id, user: alice.id) }.count == count)
        await nodes.stopAll()
    }

    /// The check after `Node.write` hands the sessions what the write stored, not again the ops
    /// applied from peers since the last look; a command's write made just before still goes
    /// out at once. Both nodes look for other processes' writes and run anti-entropy only once
    /// an hour, so neither hides what the write's own check does.
    @Test func ownWrite_handsOverItsOwnOps_notThoseAppliedFromPeers_andACommandsWriteStillGoesOut() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        func quiet(_ name: String) -> NodeConfiguration {
            var configuration = nodes.configuration(name)
            configuration.localWritePollInterval = 3_600_000
            configuration.gossip.antiEntropyInterval = 3_600_000
            return configuration
        }
        let aliceConfiguration = quiet("alice")
        var bobConfiguration = quiet("bob")
        for name in ["alice", "bob"] { try nodes.withStore(name) { try $0.log.ensurePartition(lobby, joined: true) } }
        let (aliceNode, address) = try await nodes.start(aliceConfiguration, identity: alice)
        bobConfiguration.staticPeers = [InProcessNodes.peer(alice, at: address)]
        let (bobNode, _) = try await nodes.start(bobConfiguration, identity: bob)
        #expect(await eventually { await aliceNode.linkedPeers.count == 1 })
        let (alice, bob) = (self.alice, self.bob)
        func history(_ node: Node) async -> [String] {
            (try? await node.read { store in try store.views.history(lobby.id, limit: nil).map(\.text) }) ?? []
        }

        for index in 0..<5 {
            _ = try await aliceNode.write { store in
                try store.author(post("alice \(index)"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
            }
        }
        #expect(await eventually { await history(bobNode).count == 5 })
        let found = await bobNode.localOpsFound
        _ = try await bobNode.write { store in try store.author(post("bob"), in: lobby.id, by: bob, nowMillis: Fixtures.now()) }
        #expect(await bobNode.localOpsFound == found + 1, "bob's write re-read the ops he had applied from alice")
        #expect(await eventually { await history(aliceNode).contains("bob") })

        // A command's own connection writes on bob's file; bob's next write finds it with his own.
        try nodes.withStore("bob") { store in
            try store.useIdentity(bob)
            try store.author(post("bob's command"), in: lobby.id, by: bob, nowMillis: Fixtures.now())
        }
        _ = try await bobNode.write { store in try store.author(post("bob again"), in: lobby.id, by: bob, nowMillis: Fixtures.now()) }
        #expect(await bobNode.localOpsFound == found + 3)
        #expect(
            await eventually {
                let seen = await history(aliceNode)
                return seen.contains("bob's command") && seen.contains("bob again")
            })
        await nodes.stopAll()
    }

    @Test func watch_onTheControlSocket_streamsAnotherProcessesWrites_andEndsWhenTheNodeStops() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        let (aliceNode, bobNode, _) = try await trio(nodes)
        #expect(await eventually { await aliceNode.linkedPeers.count == 2 })

        let client = try ControlClient.connect(dataDirectory: nodes.directory("bob"))
        defer { client.close() }
        let watched = Collected(try await client.watch())
        defer { watched.cancel() }

        // A command (its own store connection) writes on alice's file and pokes her.
        try nodes.withStore("alice") { store in
            try store.useIdentity(alice)
            try store.author(post("from a command"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
        }
        _ = await aliceNode.respond(to: ControlRequest(.poke))
        #expect(await eventually { watched.changed(lobby.id) }, "\(watched.all)")

        await aliceNode.typing(in: lobby.id)
        #expect(await eventually { watched.contains(.typing(partition: lobby.id, user: self.alice.id)) })

        let presenceClient = try ControlClient.connect(dataDirectory: nodes.directory("bob"))
        defer { presenceClient.close() }
        #expect(try await presenceClient.presence()[alice.id]?.linked == true)
        let refused = try await presenceClient.send(ControlRequest(.typing, partition: "not an id"))
        #expect(!refused.ok && refused.error?.contains("partition") == true)

        await bobNode.stop()
        await nodes.stopAll()
    }
}
