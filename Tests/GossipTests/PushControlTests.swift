import Identity
import Replica
import Store
import TestSupport
import Testing
import Wire

@testable import Gossip

/// Live push control (SKIP, RESUME) and the per-author push rates, one session driven by hand.
@Suite struct PushControlTests {
    let alice = Fixtures.identity(40)
    let bob = Fixtures.identity(41)
    let withPushControl = SyncHello(
        protocolVersion: GossipConfiguration.protocolVersion, maxFrame: UInt32(SyncMessage.maxBytes), features: SyncHello.pushControl)

    /// A session in sync with its peer on #lobby (equal digests), so every new op is pushed.
    func inSync(peer hello: SyncHello? = nil, configuration: GossipConfiguration = GossipConfiguration()) -> GossipSession {
        sessionInSync(with: hello ?? withPushControl, configuration: configuration)
    }
    func ops(by author: Identity, count: Int) -> [Operation] { lobbyPosts(by: author, count: count) }
    func pushes(_ directives: [GossipDirective]) -> [Operation] { pushedOps(directives) }

    @Test func hello_announcesPushControl_unlessTurnedOff() {
        // Bit1 is the room directory (ROOMS), bit3 names by number: announced by every node of this version.
        #expect(GossipConfiguration().hello.features == SyncHello.pushControl | SyncHello.roomDirectory | SyncHello.compactNames)
        var off = GossipConfiguration()
        off.pushControl = false
        #expect(off.hello.features == SyncHello.roomDirectory | SyncHello.compactNames)
    }

    @Test func duplicatePush_isReported_andARedundantPusherIsAskedToSkipOnce() {
        var session = inSync()
        let op = ops(by: alice, count: 1)[0]
        #expect(session.onMessage(.newOp(op), now: 1) == [.apply([op])])
        #expect(session.onApplied([op], outcomes: [.duplicate], now: 1).contains(.pushReceived(lobby.id, author: alice.id, duplicate: true)))
        let chain = ChainKey(partition: lobby.id, author: alice.id)
        #expect(session.onRedundantPush(lobby.id, author: alice.id, now: 1) == [.send(.skip([chain]))])
        #expect(session.onRedundantPush(lobby.id, author: alice.id, now: 2) == [])
        #expect(session.statistics.skipsSent == 1)
    }

    @Test func newPush_isReportedAsNew() {
        var session = inSync()
        let op = ops(by: alice, count: 1)[0]
        _ = session.onMessage(.newOp(op), now: 1)
        #expect(session.onApplied([op], outcomes: [.applied], now: 1).contains(.pushReceived(lobby.id, author: alice.id, duplicate: false)))
    }

    @Test func skippedChain_isNotPushed_otherChainsAre() {
        var session = inSync()
        _ = session.onMessage(.skip([ChainKey(partition: lobby.id, author: alice.id)]), now: 1)
        _ = session.onMessage(.skip([ChainKey(partition: lobby.id, author: alice.id)]), now: 1)
        #expect(session.statistics.skipsReceived == 1, "a chain skipped again counts once")
        for op in ops(by: alice, count: 3) { #expect(pushes(session.onNewLocalOp(op, now: 2)).isEmpty) }
        let bobsOp = ops(by: bob, count: 1)[0]
        #expect(pushes(session.onNewLocalOp(bobsOp, now: 2)) == [bobsOp])
    }

    @Test func resume_restoresPushes_startingAheadOfWhatThePeerIsKnownToHold() {
        var session = inSync()
        let chain = ChainKey(partition: lobby.id, author: alice.id)
        let all = ops(by: alice, count: 4)
        #expect(pushes(session.onNewLocalOp(all[0], now: 1)) == [all[0]])
        _ = session.onMessage(.skip([chain]), now: 1)
        #expect(pushes(session.onNewLocalOp(all[1], now: 2)).isEmpty)
        // The peer's last known seq is 1; op 3 is pushed anyway after RESUME (the peer WANTs op 2).
        // A vector round starts at once, so the peer learns what it missed even if no op follows.
        #expect(session.onMessage(.resume([chain]), now: 3) == [.loadVector(lobby.id)])
        #expect(pushes(session.onNewLocalOp(all[2], now: 4)) == [all[2]])
        #expect(pushes(session.onNewLocalOp(all[3], now: 4)) == [all[3]])
    }

    @Test func lostPusher_resumesOnlyTheChainsThisSessionSkipped() {
        var session = inSync()
        _ = session.onRedundantPush(lobby.id, author: alice.id, now: 1)
        let skipped = ChainKey(partition: lobby.id, author: alice.id)
        let other = ChainKey(partition: lobby.id, author: bob.id)
        #expect(session.onPushersLost([skipped, other], now: 2) == [.send(.resume([skipped]))])
        #expect(session.onPushersLost([skipped], now: 3) == [])
        #expect(session.statistics.resumesSent == 1)
    }

    @Test func peerWithoutTheFeature_isNeverSentSkipOrResume_andItsSkipsAreIgnored() {
        var session = inSync(peer: standardHello)
        let op = ops(by: alice, count: 2)
        _ = session.onMessage(.newOp(op[0]), now: 1)
        _ = session.onApplied([op[0]], outcomes: [.duplicate], now: 1)
        #expect(session.onRedundantPush(lobby.id, author: alice.id, now: 1) == [])
        #expect(session.onPushersLost([ChainKey(partition: lobby.id, author: alice.id)], now: 1) == [])
        _ = session.onMessage(.skip([ChainKey(partition: lobby.id, author: bob.id)]), now: 1)
        let bobsOp = ops(by: bob, count: 1)[0]
        #expect(pushes(session.onNewLocalOp(bobsOp, now: 2)) == [bobsOp])
        #expect(session.statistics.skipsSent == 0 && session.statistics.resumesSent == 0)
        #expect(session.statistics.skipsReceived == 0, "an ignored SKIP is not counted")
    }

    @Test func skipsFromThePeer_areBounded_theOldestForgotten() {
        var configuration = GossipConfiguration()
        configuration.maxSkippedChains = 2
        var session = inSync(configuration: configuration)
        let authors = (0..<3).map { Fixtures.identity(UInt8(50 + $0)) }
        for author in authors { _ = session.onMessage(.skip([ChainKey(partition: lobby.id, author: author.id)]), now: 1) }
        #expect(session.skippedByPeer.count == 2)
        #expect(!session.skippedByPeer.contains(ChainKey(partition: lobby.id, author: authors[0].id)))
        // Many SKIP/RESUME rounds leave the order queue bounded.
        for round in 0..<100 {
            let chain = ChainKey(partition: lobby.id, author: authors[round % 3].id)
            _ = session.onMessage(.skip([chain]), now: 2)
            _ = session.onMessage(.resume([chain]), now: 2)
        }
        #expect(session.skippedOrder.count <= 2 * configuration.maxSkippedChains + 1)
    }

    @Test func skipsSent_areBounded() {
        var configuration = GossipConfiguration()
        configuration.maxSkippedChains = 1
        var session = inSync(configuration: configuration)
        #expect(session.onRedundantPush(lobby.id, author: alice.id, now: 1).count == 1)
        #expect(session.onRedundantPush(lobby.id, author: bob.id, now: 1) == [])
    }

    // MARK: - Rates

    @Test func pushesOfOneAuthor_arePacedBelowTheLimit_thenLeftToAVectorRound() {
        var configuration = GossipConfiguration()
        configuration.authorPushRate = OpRate(perSecond: 10, burst: 10)
        var session = inSync(configuration: configuration)
        var directives: [GossipDirective] = []
        for op in ops(by: alice, count: 20) { directives += session.onNewLocalOp(op, now: 100) }
        #expect(pushes(directives).count == 8, "80% of the burst")
        #expect(directives.filter { $0 == .loadVector(lobby.id) }.count == 1, "one vector round shows the peer the rest")
        // The first op over the pace is held back by it; the later ones wait for the peer to fetch
        // the gap (no push ahead of it), each extending the vector rounds.
        #expect(session.statistics.pushesPaced == 1)
        // Another author has a budget of its own.
        #expect(pushes(session.onNewLocalOp(ops(by: bob, count: 1)[0], now: 100)).count == 1)
    }

    @Test func pushesPacedDuringARound_startAnotherRoundAfterIt() {
        var configuration = GossipConfiguration()
        configuration.authorPushRate = OpRate(perSecond: 10, burst: 10)
        var session = inSync(configuration: configuration)
        let all = ops(by: alice, count: 12)
        for op in all.prefix(10) { _ = session.onNewLocalOp(op, now: 100) }
        let head = Head(author: alice.id, maxSeq: 10, headID: all[9].id)
        _ = session.onLocalVector(lobby.id, heads: [head], now: 100)
        _ = session.onNewLocalOp(all[10], now: 100)
        let planned = session.onMessage(.vector(partition: lobby.id, more: false, heads: []), now: 100)
        #expect(planned.contains(.loadVector(lobby.id)))
    }

    @Test func newOpsOfOneAuthor_pastTheLimit_closeTheLinkAsAFlood() {
        var configuration = GossipConfiguration()
        configuration.authorPushRate = OpRate(perSecond: 10, burst: 10)
        var session = inSync(configuration: configuration)
        let flood = ops(by: alice, count: 11)
        var directives: [GossipDirective] = []
        for op in flood.prefix(10) { directives += session.onMessage(.newOp(op), now: 100) }
        #expect(closeReason(directives) == nil)
        // Another author's pushes are counted on their own.
        #expect(closeReason(session.onMessage(.newOp(ops(by: bob, count: 1)[0]), now: 100)) == nil)
        let closed = closeReason(session.onMessage(.newOp(flood[10]), now: 100))
        #expect(closed == .pushFlood(author: alice.id, rate: configuration.authorPushRate))
        #expect(closed?.isViolation == true)
    }

    @Test func newOpsAtTheSustainedRate_areAllowed() {
        var configuration = GossipConfiguration()
        configuration.authorPushRate = OpRate(perSecond: 10, burst: 10)
        var session = inSync(configuration: configuration)
        for (index, op) in ops(by: alice, count: 60).enumerated() {
            #expect(closeReason(session.onMessage(.newOp(op), now: 100 + UInt64(index) * 100)) == nil)
        }
    }

    @Test func authorRates_refill_andEvictOnlyWhatTheirSideMay() {
        var receiver = AuthorRates(rate: OpRate(perSecond: 1_000, burst: 2), capacity: 2, evictsUnrefilled: true)
        let stranger = Fixtures.identity(60).id
        var taken = [receiver.take(alice.id, now: 0), receiver.take(alice.id, now: 0), receiver.take(alice.id, now: 0)]
        #expect(taken == [true, true, false])
        // One op refills in a millisecond; then a second author, and a third in a full table
        // of unrefilled buckets: a receiver forgets one (it only gets more lenient).
        taken = [receiver.take(alice.id, now: 1), receiver.take(bob.id, now: 1), receiver.take(stranger, now: 1)]
        #expect(taken == [true, true, true])
        #expect(receiver.count == 2)

        var sender = AuthorRates(rate: OpRate(perSecond: 1, burst: 2), capacity: 2, evictsUnrefilled: false)
        // A sender takes no new author until a bucket has refilled (a fresh one could outrun
        // the receiver's).
        taken = [sender.take(alice.id, now: 0), sender.take(bob.id, now: 0), sender.take(stranger, now: 0), sender.take(stranger, now: 5_000)]
        #expect(taken == [true, true, false, true])
    }

    /// A thousand authors pushing one op each, 10 ms apart: each bucket refills within a
    /// millisecond, so the table keeps about the authors pushing now, not all of them. An author
    /// over its rate is never swept out (it is refused until its bucket refills).
    @Test func authorRates_sweepRefilledBuckets_asTheTableGrows_butNeverOneOverItsRate() {
        var rates = AuthorRates(rate: OpRate(perSecond: 1_000, burst: 1), capacity: 4_096, evictsUnrefilled: false)
        let first = [rates.take(alice.id, now: 0), rates.take(alice.id, now: 0)]
        #expect(first == [true, false], "the second is over its rate")
        var largest = 0
        for index in 0..<1_000 {
            let taken = rates.take(Fixtures.identity(UInt8(index % 200)).id, now: 1_000 + UInt64(index) * 10)
            #expect(taken)
            largest = max(largest, rates.count)
        }
        #expect(largest <= 32, "the table grew to \(largest)")
        var slow = AuthorRates(rate: OpRate(perSecond: 1, burst: 1), capacity: 4_096, evictsUnrefilled: false)
        let alicesFirst = slow.take(alice.id, now: 0)
        for index in 0..<100 { _ = slow.take(Fixtures.identity(UInt8(100 + index)).id, now: 10 + UInt64(index)) }
        let alicesSecond = slow.take(alice.id, now: 200)
        #expect(alicesFirst && !alicesSecond, "alice's empty bucket survived the sweeps")
    }
}
