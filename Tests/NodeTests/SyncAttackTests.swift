import Foundation
import Gossip
import Identity
import LinkProtocol
import Replica
import Store
import TestSupport
import Testing
import Transport
import Wire

@testable import NodeRuntime

/// docs/DESIGN.md §4.2, §8 (adversarial), in process: a peer that sends malformed or forged ops, ops
/// where it may not write, a flood of frames or of one author's pushes, loses its link and is banned; nothing it sent is
/// stored; the node keeps syncing with its honest peer.
@Suite struct SyncAttackTests {
    /// What the hostile peer does as soon as its link is ready.
    enum Attack: String, CaseIterable, Sendable {
        /// A frame of a sync type whose body does not decode.
        case malformedFrame
        /// Ops whose signatures do not verify, by a dozen authors, pushed as NEW_OP.
        case forgedOps
        /// Validly signed ops that no author may write where they are sent (posts in the
        /// directory). A profile written for the victim by a stranger is not this: it waits, since
        /// a certificate making the stranger the victim's device may still come (DESIGN §3.8).
        case notItsToWrite
        /// An op pushed into the victim's private `self` partition, never offered to the peer.
        case unofferedPartition
        /// Thousands of (ignorable) frames as fast as the link takes them.
        case flood
        /// Validly signed posts by one author, pushed as NEW_OP past the per-author push rate.
        case opFlood

        /// What the victim's log gives as the reason of the ban.
        var reason: String {
            switch self {
            case .malformedFrame: "malformed message"
            case .forgedOps: "has a signature that does not verify"
            case .notItsToWrite: "invalid ops"
            case .unofferedPartition: "which was not offered to it"
            case .flood: "flood: more than 500 frames a second"
            case .opFlood: "push flood: more than 2 ops a second"
            }
        }
    }

    /// A peer that speaks the sync protocol's HELLO and then attacks instead of syncing.
    final class HostileHandler: LinkMessageHandler {
        let attack: Attack
        let victim: UserID

        init(_ attack: Attack, victim: UserID) {
            self.attack = attack
            self.victim = victim
        }

        var syncHello: SyncHello? { GossipConfiguration().hello }

        func linkOpened(_ peer: LinkPeer, node: isolated Node) {
            var factory = OpFactory()
            func send(_ message: SyncMessage) {
                let bytes = message.encode()
                node.send(SyncFrame(type: bytes[0], payload: Array(bytes[1...])), to: peer.id)
            }
            func list(_ descriptor: PartitionDescriptor) {
                send(.summary(more: false, entries: [SummaryEntry(descriptor, digest: PartitionDigest(heads: []), revealDescriptor: true)]))
            }
            switch attack {
            case .malformedFrame:
                node.send(SyncFrame(type: SyncMessageType.ops.rawValue, payload: [1, 2, 3]), to: peer.id)
            case .forgedOps:
                list(lobby)
                for index in 0..<12 {
                    let op = factory.make(post("forged \(index)"), in: lobby.id, by: Fixtures.identity(UInt8(100 + index)))
                    var header = op.header
                    header[200] ^= 0x01  // inside the signature
                    send(.newOp(try! Operation(header: header, body: op.body)))
                }
            case .notItsToWrite:
                list(.directory)
                for index in 0..<12 {
                    send(.newOp(factory.make(post("pwned"), in: PartitionDescriptor.directory.id, by: Fixtures.identity(UInt8(120 + index)))))
                }
            case .unofferedPartition:
                let own = PartitionDescriptor.ownData(owner: victim)
                send(.newOp(factory.make(post("in your private data"), in: own.id, by: Fixtures.identity(140))))
            case .opFlood:
                list(lobby)
                let author = Fixtures.identity(150)
                for index in 0..<300 { send(.newOp(factory.make(post("flood \(index)"), in: lobby.id, by: author))) }
            case .flood:
                for _ in 0..<3_000 {
                    node.send(SyncFrame(type: SyncMessageType.presence.rawValue, payload: [0]), to: peer.id)
                }
            }
        }

        func received(_ frame: SyncFrame, from peer: LinkPeer, node: isolated Node) throws(LinkViolation) {}
        func linkClosed(_ peer: LinkPeer, node: isolated Node) {}
    }

    @Test(arguments: Attack.allCases)
    func hostilePeer_losesItsLink_isBanned_storesNothing_andTheHonestPeerKeepsSyncing(_ attack: Attack) async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        let victim = Fixtures.identity(60), honest = Fixtures.identity(61), hostile = Fixtures.identity(62)
        for (name, identity) in [("victim", victim), ("honest", honest)] {
            _ = nodes.configuration(name)
            try nodes.withStore(name) { store in
                try store.log.ensurePartition(lobby, joined: true)
                try store.author(
                    .profile(subject: identity.id, nick: name, displayName: nil, status: nil, presence: nil, avatar: nil),
                    in: PartitionDescriptor.directory.id, by: identity, nowMillis: Fixtures.now())
            }
        }
        try nodes.withStore("honest") { store in
            for index in 0..<5 { try store.author(post("honest \(index)"), in: lobby.id, by: honest, nowMillis: Fixtures.now()) }
        }

        // One violation bans at once here (Admission's count of three is tested on its own);
        // the flood limit is low so the test floods quickly.
        var victimConfiguration = nodes.configuration("victim")
        victimConfiguration.admission.violationsBeforeBan = 1
        victimConfiguration.link.rateLimit.framesPerSecond = 500
        victimConfiguration.link.rateLimit.frameBurst = 1_000
        // A low push rate: the victim must trip it however slowly it reads the flood on a busy
        // machine (13 NEW_OPs a second seen with every suite running at once).
        victimConfiguration.gossip.authorPushRate = OpRate(perSecond: 2, burst: 50)
        let victimLog = LogLines()
        let (victimNode, victimAddress) = try await nodes.start(victimConfiguration, identity: victim, log: victimLog.log(.warn))
        var honestConfiguration = nodes.configuration("honest")
        honestConfiguration.staticPeers = [InProcessNodes.peer(victim, at: victimAddress)]
        let (honestNode, _) = try await nodes.start(honestConfiguration, identity: honest)
        let synced = await eventually { nodes.opCount("victim", lobby.id) == 5 && nodes.opCount("victim", PartitionDescriptor.directory.id) == 2 }
        guard synced else {
            await nodes.stopAll()
            Issue.record("the honest peer did not sync")
            return
        }

        var hostileConfiguration = nodes.configuration("hostile")
        hostileConfiguration.staticPeers = [InProcessNodes.peer(victim, at: victimAddress)]
        let (hostileNode, _) = try await nodes.start(
            hostileConfiguration, identity: hostile,
            handler: HostileHandler(attack, victim: victim.id))

        let banned = await eventually { await victimNode.doctor().admission.bannedPeers.contains(hostile.id.text) }
        #expect(banned, "\(attack): the hostile peer is not banned")
        #expect(victimLog.all.contains { $0.contains("banned #") && $0.contains(attack.reason) }, "\(victimLog.all)")
        #expect(await eventually { await !victimNode.linkedPeers.contains(hostile.id) }, "\(attack): the hostile link stays up")
        #expect(await eventually { await hostileNode.linkedPeers.isEmpty }, "\(attack): the hostile side still sees a link")

        // Nothing of the attack is stored (but for a push flood, what it pushed within the limit,
        // the burst of 50 and what the rate refilled meanwhile: those are valid posts).
        let stored = nodes.opCount("victim", lobby.id)
        if attack == .opFlood {
            #expect(stored < 5 + 100, "\(stored) ops in #lobby")
        } else {
            #expect(stored == 5)
        }
        #expect(nodes.opCount("victim", PartitionDescriptor.directory.id) == 2)
        #expect(nodes.opCount("victim", PartitionDescriptor.ownData(owner: victim.id).id) == 0)
        #expect(try nodes.withStore("victim") { try $0.directory.profile(victim.id)?.nick } == "victim")

        // The honest peer stayed linked, and its news still arrives.
        #expect(await victimNode.linkedPeers.contains(honest.id))
        try nodes.withStore("honest") { store in _ = try store.author(post("still here"), in: lobby.id, by: honest, nowMillis: Fixtures.now()) }
        _ = await honestNode.respond(to: ControlRequest(.poke))
        #expect(await eventually { nodes.opCount("victim", lobby.id) == stored + 1 }, "\(attack): the honest peer's new op did not arrive")
        await nodes.stopAll()
    }

    /// Starts a relay and an honest node linked to it that closes its link at the first invalid
    /// op (so it shows any the relay passes on); both log warnings.
    func startRelay(
        _ configuration: NodeConfiguration, _ relay: Identity, andHonestNode honest: Identity, _ nodes: InProcessNodes
    ) async throws -> (relay: Node, address: SocketAddress, relayLog: LogLines, honest: Node, honestLog: LogLines) {
        let relayLog = LogLines()
        let (relayNode, relayAddress) = try await nodes.start(configuration, identity: relay, log: relayLog.log(.warn))
        var honestConfiguration = nodes.configuration("honest")
        honestConfiguration.staticPeers = [InProcessNodes.peer(relay, at: relayAddress)]
        honestConfiguration.gossip.maxInvalidOps = 0
        let honestLog = LogLines()
        let (honestNode, _) = try await nodes.start(honestConfiguration, identity: honest, log: honestLog.log(.warn))
        #expect(await eventually { await relayNode.linkedPeers.contains(honest.id) })
        return (relayNode, relayAddress, relayLog, honestNode, honestLog)
    }

    /// Pushes its own post with a bad signature: the link proves who wrote it, so the node
    /// stores it before checking the signature (`ReplicaStore.maxLinkAuthenticatedTail`).
    final class OwnBadSignaturePusher: LinkMessageHandler {
        let op: Replica.Operation

        init(_ op: Replica.Operation) { self.op = op }

        var syncHello: SyncHello? { GossipConfiguration().hello }

        func linkOpened(_ peer: LinkPeer, node: isolated Node) {
            for message in [
                SyncMessage.summary(more: false, entries: [SummaryEntry(lobby, digest: PartitionDigest(heads: []), revealDescriptor: true)]), .newOp(op),
            ] {
                let bytes = message.encode()
                node.send(SyncFrame(type: bytes[0], payload: Array(bytes[1...])), to: peer.id)
            }
        }

        func received(_ frame: SyncFrame, from peer: LinkPeer, node: isolated Node) throws(LinkViolation) {}
        func linkClosed(_ peer: LinkPeer, node: isolated Node) {}
    }

    /// An op held on its author's link's word leaves the node only once its signature checks
    /// out: a bad one is dropped instead of being passed on, so the honest peer never sees an
    /// invalid op from the node (one would close its link here) and nothing of it stays.
    @Test func opPushedByItsAuthorWithABadSignature_isCheckedBeforeItIsPassedOn_andDropped() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        let relay = Fixtures.identity(64), honest = Fixtures.identity(65), author = Fixtures.identity(66)
        try nodes.prepare(["relay", "honest"], joining: lobby)
        let (_, relayAddress, relayLog, honestNode, honestLog) = try await startRelay(
            nodes.configuration("relay"), relay, andHonestNode: honest, nodes)

        var factory = OpFactory()
        let good = factory.make(post("signed badly"), in: lobby.id, by: author)
        var header = good.header
        header[Operation.signedBytes + 3] ^= 0x01
        var authorConfiguration = nodes.configuration("author")
        authorConfiguration.staticPeers = [InProcessNodes.peer(relay, at: relayAddress)]
        _ = try await nodes.start(authorConfiguration, identity: author, handler: OwnBadSignaturePusher(try Operation(header: header, body: good.body)))

        #expect(
            await eventually { relayLog.all.contains { $0.contains("has a signature that does not verify; removed it") } },
            "the relay did not check the op before passing it on: \(relayLog.all)")
        #expect(await eventually { nodes.opCount("relay", lobby.id) == 0 })
        #expect(nodes.opCount("honest", lobby.id) == 0)
        #expect(await honestNode.linkedPeers.contains(relay.id), "\(honestLog.all)")
        #expect(!honestLog.all.contains { $0.contains("invalid op") || $0.contains("does not verify") }, "\(honestLog.all)")

        // The place is free: the good op, written into the honest node's store, replaces it.
        #expect(try nodes.withStore("honest") { try $0.apply(good, nowMillis: Fixtures.now()) } == .applied)
        _ = await honestNode.respond(to: ControlRequest(.poke))
        #expect(await eventually { nodes.opCount("relay", lobby.id) == 1 }, "the good op did not reach the relay")
        #expect(try nodes.withStore("relay") { try $0.views.history(lobby.id).map(\.text) } == ["signed badly"])
        await nodes.stopAll()
    }

    /// Serves its own chain with every signature zeroed but the run's last, to whoever asks:
    /// the chain proves the ops, so a node that checks only a run's last signature takes them.
    final class ZeroedSignatureServer: LinkMessageHandler {
        let ops: [Replica.Operation]

        init(_ ops: [Replica.Operation]) { self.ops = ops }

        var syncHello: SyncHello? { GossipConfiguration().hello }

        static func zeroed(_ op: Replica.Operation) -> Replica.Operation {
            var header = op.header
            for index in Operation.signedBytes..<Operation.headerBytes { header[index] = 0 }
            return try! Operation(header: header, body: op.body)
        }

        func send(_ message: SyncMessage, to peer: LinkPeer, node: isolated Node) {
            let bytes = message.encode()
            node.send(SyncFrame(type: bytes[0], payload: Array(bytes[1...])), to: peer.id)
        }

        /// Lists the lobby with the chain's head, and offers the head.
        func offer(to peer: LinkPeer, node: isolated Node) {
            let head = Head(author: ops[0].author, maxSeq: ops.last!.seq, headID: ops.last!.id)
            send(.summary(more: false, entries: [SummaryEntry(lobby, digest: PartitionDigest(heads: [head]), revealDescriptor: true)]), to: peer, node: node)
            send(.vector(partition: lobby.id, more: false, heads: [head]), to: peer, node: node)
        }

        func linkOpened(_ peer: LinkPeer, node: isolated Node) { offer(to: peer, node: node) }

        func received(_ frame: SyncFrame, from peer: LinkPeer, node: isolated Node) throws(LinkViolation) {
            switch try? SyncMessage.decode([frame.type] + frame.payload) {
            case .want(_, _, let fromSeq, let count):
                let run = ops.filter { $0.seq >= fromSeq }.prefix(Int(count))
                let served = run.map { $0.seq == run.last!.seq ? $0 : Self.zeroed($0) }
                send(.ops(OpBatch(partition: lobby.id, author: ops[0].author, ops: served, isLast: true)), to: peer, node: node)
            case .summary:
                offer(to: peer, node: node)
            default:
                break
            }
        }

        func linkClosed(_ peer: LinkPeer, node: isolated Node) {}
    }

    /// The poisoned link: a peer serves a chain whose signatures are zeroed but the run's
    /// last. The relay takes the run on its chain's word, but checks every op before passing
    /// one on: it finds the bad ones, removes them, and refuses the same copies when they come
    /// back (the peer loses its link and is banned). The honest node behind the relay never
    /// gets an op it would refuse, and its link to the relay stays up.
    @Test func aPeerServingZeroedSignatures_isRefused_andNothingItSentReachesTheNodesBehind() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        let relay = Fixtures.identity(67), honest = Fixtures.identity(68), poisoner = Fixtures.identity(69)
        try nodes.prepare(["relay", "honest"], joining: lobby)
        var relayConfiguration = nodes.configuration("relay")
        relayConfiguration.admission.violationsBeforeBan = 1
        let (relayNode, relayAddress, relayLog, honestNode, honestLog) = try await startRelay(
            relayConfiguration, relay, andHonestNode: honest, nodes)

        // More ops than the relay serves in one batch (`GossipConfiguration.loadBatch`).
        var factory = OpFactory()
        let ops = (1...100).map { factory.make(post("p\($0)"), in: lobby.id, by: poisoner) }
        var poisonerConfiguration = nodes.configuration("poisoner")
        poisonerConfiguration.staticPeers = [InProcessNodes.peer(relay, at: relayAddress)]
        _ = try await nodes.start(poisonerConfiguration, identity: poisoner, handler: ZeroedSignatureServer(ops))

        #expect(
            await eventually { relayLog.all.contains { $0.contains("has a signature that does not verify; removed it") } },
            "the relay did not check the ops before passing them on: \(relayLog.all)")
        #expect(
            await eventually { await relayNode.doctor().admission.bannedPeers.contains(poisoner.id.text) },
            "the poisoner was not banned: \(relayLog.all)")
        #expect(await eventually { nodes.opCount("relay", lobby.id) == 0 })
        #expect(nodes.opCount("honest", lobby.id) == 0)
        #expect(await honestNode.linkedPeers.contains(relay.id), "\(honestLog.all)")
        #expect(!honestLog.all.contains { $0.contains("invalid op") || $0.contains("does not verify") }, "\(honestLog.all)")
        #expect(try nodes.withStore("relay") { try $0.log.refusedSignatureCount() } == 1)

        // The good ops, written into the honest node's store, reach the relay: the refused place
        // takes an op whose own signature verifies.
        #expect(try nodes.withStore("honest") { try $0.apply(ops, nowMillis: Fixtures.now()) }.allSatisfy { $0 == .applied })
        _ = await honestNode.respond(to: ControlRequest(.poke))
        #expect(await eventually { nodes.opCount("relay", lobby.id) == 100 }, "the good ops did not reach the relay")
        #expect(try nodes.withStore("relay") { try $0.log.refusedSignatureCount() } == 0)
        await nodes.stopAll()
    }
}
