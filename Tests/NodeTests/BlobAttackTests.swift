import Foundation
import Gossip
import Identity
import LinkProtocol
import Replica
import Sodium
import Store
import Synchronization
import TestSupport
import Testing
import Wire

@testable import NodeRuntime

/// Blobs from hostile peers, and posts by non-members (issue 6), in process: a peer that
/// answers BLOB_WANT with data that does not hash to what it claimed, with a blob over the
/// limit, or with chunks beyond the size it declared loses its link and is banned, nothing it
/// sent is stored, and the blob then comes from an honest peer; a non-member's post into a
/// conversation is stored nowhere.
@Suite struct BlobAttackTests {
    enum Attack: String, CaseIterable, Sendable {
        /// The right size, the wrong bytes.
        case corrupt
        /// A declared total of 9 MiB.
        case oversized
        /// A chunk that runs past the total it declares.
        case beyondDeclaredSize

        var reason: String {
            switch self {
            case .corrupt: "does not hash to what it claimed"
            case .oversized, .beyondDeclaredSize: "malformed BLOB"
            }
        }
    }

    /// Answers every BLOB_WANT with the attack.
    final class HostileBlobServer: LinkMessageHandler {
        let attack: Attack
        let size: Int

        init(_ attack: Attack, size: Int) {
            self.attack = attack
            self.size = size
        }

        var syncHello: SyncHello? { GossipConfiguration().hello }
        func linkOpened(_ peer: LinkPeer, node: isolated Node) {}
        func linkClosed(_ peer: LinkPeer, node: isolated Node) {}

        func received(_ frame: SyncFrame, from peer: LinkPeer, node: isolated Node) throws(LinkViolation) {
            guard frame.type == SyncMessageType.blobWant.rawValue,
                case .want(let partition, let hash, let offset, _)? = try? BlobMessage.decode([frame.type] + frame.payload)
            else { return }
            var writer = ByteWriter()
            writer.bytes32(partition.raw)
            writer.bytes32(hash)
            writer.u8(0)
            switch attack {
            case .corrupt:
                for position in stride(from: Int(offset), to: size, by: BlobMessage.chunkBytes) {
                    let chunk = BlobChunk(
                        partition: partition, hash: hash, isAvailable: true, total: UInt32(size), offset: UInt32(position),
                        data: [UInt8](repeating: 0xAB, count: min(BlobMessage.chunkBytes, size - position)))
                    let bytes = BlobMessage.chunk(chunk).encode()
                    node.send(SyncFrame(type: bytes[0], payload: Array(bytes[1...])), to: peer.id)
                }
                return
            case .oversized:
                writer.u32(UInt32(9 << 20))
                writer.u32(0)
                writer.raw([UInt8](repeating: 1, count: 1_024))
            case .beyondDeclaredSize:
                writer.u32(100)
                writer.u32(0)
                writer.raw([UInt8](repeating: 1, count: 1_024))
            }
            node.send(SyncFrame(type: SyncMessageType.blob.rawValue, payload: writer.bytes), to: peer.id)
        }
    }

    @Test(arguments: Attack.allCases)
    func hostileBlobServer_isBanned_storesNothing_andTheBlobComesFromAnHonestPeer(_ attack: Attack) async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        let victim = Fixtures.identity(70), honest = Fixtures.identity(71), hostile = Fixtures.identity(72)
        // honest posts a 300 KiB file in the lobby; the victim receives the post (not the file).
        let content = (0..<300 * 1_024).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        _ = nodes.configuration("honest")
        let post = try nodes.withStore("honest") { store -> Replica.Operation in
            try store.log.ensurePartition(lobby, joined: true)
            let attachment = try store.attach(content, name: "map.png", mime: "image/png", in: lobby.id, by: honest, nowMillis: Fixtures.now())
            return try store.author(
                .post(text: "the map", attachments: [attachment], location: nil, replyTo: nil), in: lobby.id, by: honest, nowMillis: Fixtures.now())
        }
        let hash = Bytes32(GenericHash.hash(content))!
        var victimConfiguration = nodes.configuration("victim")
        victimConfiguration.admission.violationsBeforeBan = 1
        try nodes.withStore("victim") { store in
            try store.log.ensurePartition(lobby, joined: true)
            #expect(try store.apply([post], nowMillis: Fixtures.now()) == [.applied])
            #expect(try store.blobs.missingBlobs().map(\.hash) == [hash])
        }

        let victimLog = LogLines()
        let (victimNode, victimAddress) = try await nodes.start(victimConfiguration, identity: victim, log: victimLog.log(.warn))
        var hostileConfiguration = nodes.configuration("hostile")
        hostileConfiguration.staticPeers = [InProcessNodes.peer(victim, at: victimAddress)]
        _ = try await nodes.start(hostileConfiguration, identity: hostile, handler: HostileBlobServer(attack, size: content.count))

        let banned = await eventually { await victimNode.doctor().admission.bannedPeers.contains(hostile.id.text) }
        #expect(banned, "\(attack): the hostile peer is not banned; log: \(victimLog.all)")
        #expect(victimLog.all.contains { $0.contains("banned #") && $0.contains(attack.reason) }, "\(victimLog.all)")
        #expect(try nodes.withStore("victim") { try $0.blobs.hasBlob(hash) } == false)
        #expect(try nodes.withStore("victim") { try $0.blobs.blobChunk(hash, offset: 0, length: 1) } == nil)

        var honestConfiguration = nodes.configuration("honest")
        honestConfiguration.staticPeers = [InProcessNodes.peer(victim, at: victimAddress)]
        _ = try await nodes.start(honestConfiguration, identity: honest)
        let fetched = await eventually { (try? nodes.withStore("victim") { try $0.blobs.blob(hash) }) == content }
        #expect(fetched, "\(attack): the honest peer's blob did not arrive")
        await nodes.stopAll()
    }

    @Test func aNonMembersPost_isStoredNowhere_andItsProfileForgeryNeither() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        let alice = Fixtures.identity(80), bob = Fixtures.identity(81), mallory = Fixtures.identity(82)
        _ = nodes.configuration("alice")
        _ = nodes.configuration("bob")
        let conversation = try nodes.withStore("alice") { store in
            try store.createConversation(name: "pair", members: [bob.id], by: alice, nowMillis: Fixtures.now())
        }
        let (_, aliceAddress) = try await nodes.start(nodes.configuration("alice"), identity: alice)
        var bobConfiguration = nodes.configuration("bob")
        bobConfiguration.staticPeers = [InProcessNodes.peer(alice, at: aliceAddress)]
        _ = try await nodes.start(bobConfiguration, identity: bob)
        let aliceOps = nodes.opCount("alice", conversation.id)
        #expect(await eventually { nodes.opCount("bob", conversation.id) == aliceOps })

        // mallory, linked to both, pushes a post into the conversation (encrypted under a key of
        // her own) and a profile written for alice.
        var factory = OpFactory()
        let key = Fixtures.epochKey(conversation.id, epoch: 0, seed: 9)
        let forged = factory.makeEncrypted(post("mallory was here"), with: key, by: mallory)
        let profile = factory.make(
            .profile(subject: alice.id, nick: "mallory", displayName: nil, status: nil, presence: nil, avatar: nil),
            in: PartitionDescriptor.directory.id, by: mallory)
        // A third author's own profile goes last: frames are handled in order, so once it is
        // stored everywhere the forged ops were decided.
        let marker = Fixtures.identity(83)
        let honestEntry = factory.make(
            .profile(subject: marker.id, nick: "marker", displayName: nil, status: nil, presence: nil, avatar: nil),
            in: PartitionDescriptor.directory.id, by: marker)
        var malloryConfiguration = nodes.configuration("mallory")
        malloryConfiguration.staticPeers = [InProcessNodes.peer(alice, at: aliceAddress)]
        _ = try await nodes.start(
            malloryConfiguration, identity: mallory, handler: Pusher(conversation: conversation, ops: [forged, profile, honestEntry]))
        let decided = await eventually {
            ["alice", "bob"].allSatisfy { name in (try? nodes.withStore(name) { try $0.directory.profile(marker.id)?.nick }) == "marker" }
        }
        #expect(decided, "the last op mallory pushed did not arrive")
        for name in ["alice", "bob"] {
            #expect(nodes.opCount(name, conversation.id) == aliceOps, "\(name) stored the non-member's post")
            #expect(try nodes.withStore(name) { try $0.views.history(conversation.id).contains { $0.author == mallory.id } } == false)
            #expect(try nodes.withStore(name) { try $0.directory.profile(alice.id)?.nick } != "mallory")
        }
        await nodes.stopAll()
    }

    @Test func aNonMember_isNeverServedAConversationsBlob_underAnyPartition() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        let alice = Fixtures.identity(90), bob = Fixtures.identity(91), mallory = Fixtures.identity(92)
        _ = nodes.configuration("alice")
        let hash = try nodes.withStore("alice") { store -> Bytes32 in
            try store.log.ensurePartition(lobby, joined: true)
            let conversation = try store.createConversation(name: "pair", members: [bob.id], by: alice, nowMillis: Fixtures.now())
            let attachment = try store.attach(
                [UInt8](repeating: 5, count: 5_000), name: "x.png", mime: "image/png", in: conversation.id, by: alice, nowMillis: Fixtures.now())
            try store.author(.post(text: "", attachments: [attachment], location: nil, replyTo: nil), in: conversation.id, by: alice, nowMillis: Fixtures.now())
            #expect(try store.blobs.isBlobNamed(attachment.hash, in: conversation.id))
            return attachment.hash
        }
        let conversation = try #require(try nodes.withStore("alice") { try $0.log.partitions().first { $0.descriptor.kind == .conversation }?.id })
        let (_, aliceAddress) = try await nodes.start(nodes.configuration("alice"), identity: alice)
        let asked = [conversation, lobby.id, PartitionDescriptor.directory.id, PartitionDescriptor.ownData(owner: alice.id).id]
        let asker = BlobAsker(asks: asked.map { BlobMessage.want(partition: $0, hash: hash, offset: 0, chunks: 8) })
        var malloryConfiguration = nodes.configuration("mallory")
        malloryConfiguration.staticPeers = [InProcessNodes.peer(alice, at: aliceAddress)]
        _ = try await nodes.start(malloryConfiguration, identity: mallory, handler: asker)
        #expect(await eventually { asker.answers.withLock { $0.count } == asked.count })
        let answers = asker.answers.withLock { $0 }
        #expect(answers.map(\.partition) == asked)
        #expect(answers.allSatisfy { !$0.isAvailable && $0.data.isEmpty }, "a non-member was sent blob data: \(answers)")
        await nodes.stopAll()
    }

    /// Sends BLOB_WANTs as soon as the link is ready and records every BLOB.
    final class BlobAsker: LinkMessageHandler, Sendable {
        let asks: [BlobMessage]
        let answers = Mutex<[BlobChunk]>([])

        init(asks: [BlobMessage]) { self.asks = asks }

        var syncHello: SyncHello? { GossipConfiguration().hello }

        func linkOpened(_ peer: LinkPeer, node: isolated Node) {
            for ask in asks {
                let bytes = ask.encode()
                node.send(SyncFrame(type: bytes[0], payload: Array(bytes[1...])), to: peer.id)
            }
        }

        func received(_ frame: SyncFrame, from peer: LinkPeer, node: isolated Node) throws(LinkViolation) {
            guard frame.type == SyncMessageType.blob.rawValue, case .chunk(let chunk)? = try? BlobMessage.decode([frame.type] + frame.payload) else { return }
            answers.withLock { $0.append(chunk) }
        }

        func linkClosed(_ peer: LinkPeer, node: isolated Node) {}
    }

    /// Lists the conversation and the directory, and pushes its ops as NEW_OP.
    final class Pusher: LinkMessageHandler {
        let conversation: PartitionDescriptor
        let ops: [Replica.Operation]

        init(conversation: PartitionDescriptor, ops: [Replica.Operation]) {
            self.conversation = conversation
            self.ops = ops
        }

        var syncHello: SyncHello? { GossipConfiguration().hello }

        func linkOpened(_ peer: LinkPeer, node: isolated Node) {
            func send(_ message: SyncMessage) {
                let bytes = message.encode()
                node.send(SyncFrame(type: bytes[0], payload: Array(bytes[1...])), to: peer.id)
            }
            let empty = PartitionDigest(heads: [])
            send(
                .summary(
                    more: false,
                    entries: [
                        SummaryEntry(conversation, digest: empty, revealDescriptor: true),
                        SummaryEntry(.directory, digest: empty, revealDescriptor: true),
                    ]))
            for op in ops { send(.newOp(op)) }
        }

        func received(_ frame: SyncFrame, from peer: LinkPeer, node: isolated Node) throws(LinkViolation) {}
        func linkClosed(_ peer: LinkPeer, node: isolated Node) {}
    }
}
