import Identity
import Replica
import Store
import TestSupport
import Testing
import Wire

@testable import Gossip

/// The broadcast tree (PRUNE, GRAFT, ANNOUNCE), one session driven by hand: a link that brings
/// an op already held leaves the partition's tree, announces instead of pushing, and an
/// announced gap the tree does not fill in time is fetched through the announcer.
@Suite struct TreePushTests {
    let alice = Fixtures.identity(42)
    let bob = Fixtures.identity(43)
    let withTree = SyncHello(
        protocolVersion: GossipConfiguration.protocolVersion, maxFrame: UInt32(SyncMessage.maxBytes),
        features: SyncHello.pushControl | SyncHello.treePush)

    /// The tree is on (it is off by default).
    var tree: GossipConfiguration {
        var configuration = GossipConfiguration()
        configuration.treePush = true
        return configuration
    }

    /// A session in sync with its peer on #lobby (equal digests), so every new op is pushed.
    func inSync(peer hello: SyncHello? = nil) -> GossipSession { sessionInSync(with: hello ?? withTree, configuration: tree) }
    func ops(by author: Identity, count: Int) -> [Operation] { lobbyPosts(by: author, count: count) }
    func pushes(_ directives: [GossipDirective]) -> [Operation] { pushedOps(directives) }

    func announced(_ directives: [GossipDirective]) -> [AnnouncedHead] {
        messages(directives).flatMap { message -> [AnnouncedHead] in
            if case .announce(_, let heads) = message { return heads }
            return []
        }
    }

    func wants(_ directives: [GossipDirective]) -> [ChainKey] {
        directives.compactMap {
            if case .claimChain(let partition, let author) = $0 { ChainKey(partition: partition, author: author) } else { nil }
        }
    }

    @Test func hello_announcesTheTree_onlyWhenTurnedOn() {
        #expect(GossipConfiguration().hello.features & SyncHello.treePush == 0)
        #expect(tree.hello.features & SyncHello.treePush != 0)
    }

    @Test func duplicatePush_prunesThePartitionOnce_andItsOpsAreAnnouncedThen() {
        var session = inSync()
        let mine = ops(by: alice, count: 3)
        #expect(session.onMessage(.newOp(mine[0]), now: 1) == [.apply([mine[0]])])
        let outcome = session.onApplied([mine[0]], outcomes: [.duplicate], now: 1)
        #expect(messages(outcome) == [.prune([lobby.id])])
        #expect(session.onRedundantPush(lobby.id, author: alice.id, now: 1) == [], "no SKIP on a tree link")
        // Further duplicates do not prune again.
        _ = session.onMessage(.newOp(mine[1]), now: 2)
        #expect(messages(session.onApplied([mine[1]], outcomes: [.duplicate], now: 2)).isEmpty)
        #expect(session.statistics.prunesSent == 1)

        // Bob's ops go out as one announcement of his newest seq, after the announce delay.
        let bobs = ops(by: bob, count: 3)
        var directives: [GossipDirective] = []
        for op in bobs { directives += session.onNewLocalOp(op, now: 10) }
        #expect(pushes(directives).isEmpty)
        #expect(directives.contains(.scheduleTick(after: GossipConfiguration().announceDelay)))
        #expect(announced(session.onTick(now: 10 + GossipConfiguration().announceDelay)) == [AnnouncedHead(author: bob.id, seq: 3)])
        // Alice's op 3: the peer is known to hold up to 2 (it pushed them), so 3 is announced.
        _ = session.onNewLocalOp(mine[2], now: 100)
        #expect(announced(session.onTick(now: 200)) == [AnnouncedHead(author: alice.id, seq: 3)])
    }

    @Test func pruneFromThePeer_turnsTheLinkLazy_graftTurnsItBack() {
        var session = inSync()
        let bobs = ops(by: bob, count: 3)
        #expect(pushes(session.onNewLocalOp(bobs[0], now: 1)) == [bobs[0]])
        _ = session.onMessage(.prune([lobby.id]), now: 2)
        #expect(pushes(session.onNewLocalOp(bobs[1], now: 3)).isEmpty)
        #expect(announced(session.onTick(now: 100)) == [AnnouncedHead(author: bob.id, seq: 2)])
        _ = session.onMessage(.graft([lobby.id]), now: 101)
        // The peer holds 1 and fetches 2 itself; op 3 follows it... but only once it holds 2.
        _ = session.onMessage(.want(partition: lobby.id, author: bob.id, fromSeq: 2, maxCount: 1), now: 102)
        _ = session.onOpsLoaded(lobby.id, author: bob.id, ops: [bobs[1]], now: 102)
        #expect(pushes(session.onNewLocalOp(bobs[2], now: 103)) == [bobs[2]])
    }

    @Test func announcedGap_waitsForTheTree_thenIsFetchedThroughTheAnnouncer_whoseLinkIsGrafted() {
        var session = inSync()
        let timeout = GossipConfiguration().graftTimeout
        let bobs = ops(by: bob, count: 2)
        #expect(pushes(session.onNewLocalOp(bobs[0], now: 1)) == [bobs[0]])  // both hold bob's op 1
        _ = session.onMessage(.prune([lobby.id]), now: 1)
        let heard = session.onMessage(.announce(partition: lobby.id, heads: [AnnouncedHead(author: bob.id, seq: 2)]), now: 5)
        #expect(wants(heard).isEmpty, "the tree may still bring it")
        #expect(heard.contains(.scheduleTick(after: timeout)))
        #expect(wants(session.onTick(now: 5 + timeout - 1)).isEmpty)
        let overdue = session.onTick(now: 5 + timeout)
        #expect(wants(overdue) == [ChainKey(partition: lobby.id, author: bob.id)])
        let granted = session.onChainClaim(lobby.id, author: bob.id, granted: true, now: 5 + timeout)
        #expect(messages(granted) == [.graft([lobby.id]), .want(partition: lobby.id, author: bob.id, fromSeq: 2, maxCount: 1)])
        #expect(session.statistics.graftsSent == 1)
        // Grafted: new ops are pushed again.
        let alices = ops(by: alice, count: 1)
        #expect(pushes(session.onNewLocalOp(alices[0], now: 200)) == alices)
    }

    @Test func announcedGap_thatTheTreeFills_isNotFetched() {
        var session = inSync()
        let bobs = ops(by: bob, count: 2)
        _ = session.onNewLocalOp(bobs[0], now: 1)
        _ = session.onMessage(.prune([lobby.id]), now: 1)
        _ = session.onMessage(.announce(partition: lobby.id, heads: [AnnouncedHead(author: bob.id, seq: 2)]), now: 5)
        // Another link brought op 2: applied here, it reaches this session too.
        #expect(announced(session.onNewLocalOp(bobs[1], now: 20)).isEmpty)
        let later = session.onTick(now: 1_000)
        #expect(wants(later).isEmpty && messages(later).isEmpty, "no GRAFT, no WANT, no announcement of what the peer holds")
    }

    @Test func peerWithoutTheTree_isNeverPruned_andItsTreeMessagesAreIgnored() {
        var session = inSync(
            peer: SyncHello(protocolVersion: GossipConfiguration.protocolVersion, maxFrame: UInt32(SyncMessage.maxBytes), features: SyncHello.pushControl))
        let mine = ops(by: alice, count: 1)
        _ = session.onMessage(.newOp(mine[0]), now: 1)
        #expect(messages(session.onApplied([mine[0]], outcomes: [.duplicate], now: 1)).isEmpty)
        _ = session.onMessage(.prune([lobby.id]), now: 2)
        let bobs = ops(by: bob, count: 1)
        #expect(pushes(session.onNewLocalOp(bobs[0], now: 3)) == bobs, "a PRUNE from a peer that did not announce the tree is ignored")
        #expect(wants(session.onMessage(.announce(partition: lobby.id, heads: [AnnouncedHead(author: alice.id, seq: 9)]), now: 4)).isEmpty)
        #expect(wants(session.onTick(now: 10_000)).isEmpty)
        #expect(session.statistics.prunesSent == 0)
    }

    @Test func announcementsGathered_areBoundedByMaxChains() {
        var configuration = tree
        configuration.maxChains = 2
        var session = sessionInSync(with: withTree, configuration: configuration)
        _ = session.onMessage(.prune([lobby.id]), now: 1)
        for index in 0..<5 { _ = session.onNewLocalOp(ops(by: Fixtures.identity(UInt8(50 + index)), count: 1)[0], now: 2) }
        #expect(announced(session.onTick(now: 100)).count == 2)
    }

    @Test func gapsWaitingForTheTree_areBoundedByMaxChains() {
        var configuration = tree
        configuration.maxChains = 2
        var session = sessionInSync(with: withTree, configuration: configuration)
        _ = session.onMessage(.prune([lobby.id]), now: 1)
        let heads = (0..<5).map { AnnouncedHead(author: Fixtures.identity(UInt8(60 + $0)).id, seq: 3) }
        _ = session.onMessage(.announce(partition: lobby.id, heads: heads), now: 2)
        #expect(session.graftWaiting.count == 2)
    }
}
