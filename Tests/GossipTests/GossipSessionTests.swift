import Identity
import Replica
import Store
import TestSupport
import Testing
import Wire

@testable import Gossip

/// One session driven by hand: paging, batching within frames, the bounded buffer, timers.
@Suite struct GossipSessionTests {
    let mallory = Fixtures.identity(3)

    @Test func start_sendsTheSummary_andAsksForTheAntiEntropyTick() {
        var session = GossipSession()
        let summaries = [
            PartitionSummary(descriptor: .directory, digest: .empty, sharing: .offer),
            PartitionSummary(descriptor: lobby, digest: .empty, sharing: .ifPeerHolds),
            PartitionSummary(descriptor: .ownData(owner: mallory.id), digest: .empty, sharing: .never),
        ]
        let directives = session.start(local: summaries, peer: standardHello, now: 1_000)
        #expect(
            directives == [
                .send(
                    .summary(
                        more: false,
                        entries: [
                            SummaryEntry(.directory, digest: .empty, revealDescriptor: true),
                            SummaryEntry(lobby, digest: .empty, revealDescriptor: false),
                        ])),
                .scheduleTick(after: 30_000),
            ])
    }

    @Test func summary_ofManyPartitions_isPagedWithinAFrame() {
        var session = GossipSession()
        let summaries = (0..<5_000).map { PartitionSummary(descriptor: .room(RoomName("room-\($0)")!), digest: .empty, sharing: .offer) }
        let smallFrames = SyncHello(protocolVersion: GossipConfiguration.protocolVersion, maxFrame: UInt32(GossipConfiguration.minimumFrameBytes), features: 0)
        let pages = messages(session.start(local: summaries, peer: smallFrames, now: 0)).compactMap { message -> (Bool, [SummaryEntry], Int)? in
            if case .summary(let more, let entries) = message { (more, entries, message.encode().count) } else { nil }
        }
        #expect(pages.count > 1)
        #expect(pages.dropLast().allSatisfy { $0.0 } && pages.last?.0 == false)
        #expect(pages.allSatisfy { $0.2 <= GossipConfiguration.minimumFrameBytes && $0.1.count <= SyncMessage.maxSummaryEntries })
        #expect(Set(pages.flatMap { $0.1.map(\.partition) }) == Set(summaries.map(\.id)))
    }

    @Test func vector_ofManyAuthors_isPaged() {
        let summary = PartitionSummary(descriptor: lobby, digest: .empty, sharing: .ifPeerHolds)
        var session = startedSession([summary])
        let other = PartitionDigest(heads: [Head(author: mallory.id, maxSeq: 1, headID: OpID(Bytes32(w0: 1, w1: 1, w2: 1, w3: 1)))])
        let listed = session.onMessage(.summary(more: false, entries: [SummaryEntry(lobby, digest: other, revealDescriptor: false)]), now: 0)
        #expect(listed == [.loadVector(lobby.id)])
        let heads = (0..<2_500).map {
            Head(author: UserID(Bytes32(w0: UInt64($0) + 1, w1: 0, w2: 0, w3: 0)), maxSeq: 1, headID: OpID(Bytes32(w0: 9, w1: 0, w2: 0, w3: 0)))
        }
        let pages = messages(session.onLocalVector(lobby.id, heads: heads, now: 0)).compactMap { message -> (Bool, Int)? in
            if case .vector(_, let more, let heads) = message { (more, heads.count) } else { nil }
        }
        #expect(pages.map(\.0) == [true, true, false])
        #expect(pages.map(\.1) == [1_024, 1_024, 452])
    }

    @Test func answer_ofLargeOps_isSplitIntoFrames_endingWithTheLastFlag() throws {
        let summary = PartitionSummary(descriptor: lobby, digest: .empty, sharing: .ifPeerHolds)
        var session = startedSession([summary])
        _ = session.onMessage(.summary(more: false, entries: [SummaryEntry(lobby, digest: .empty, revealDescriptor: false)]), now: 0)
        #expect(
            session.onMessage(.want(partition: lobby.id, author: mallory.id, fromSeq: 1, maxCount: 100), now: 0)
                == [.loadOps(lobby.id, author: mallory.id, fromSeq: 1, limit: 64)])
        var factory = OpFactory()
        let text = String(repeating: "x", count: BodyLimits.textBytes)
        let ops = (0..<100).map { _ in factory.make(post(text), in: lobby.id, by: mallory) }
        let first = session.onOpsLoaded(lobby.id, author: mallory.id, ops: Array(ops[0..<64]), now: 0)
        #expect(first.last == .loadOps(lobby.id, author: mallory.id, fromSeq: 65, limit: 36))
        // Only 30 are left in the store: the answer ends short, with the last flag.
        let second = session.onOpsLoaded(lobby.id, author: mallory.id, ops: Array(ops[64..<94]), now: 0)
        let batches = (messages(first) + messages(second)).compactMap { if case .ops(let batch) = $0 { batch } else { nil } }
        #expect(batches.flatMap(\.ops) == Array(ops[0..<94]))
        #expect(batches.allSatisfy { SyncMessage.ops($0).encode().count <= SyncMessage.maxBytes })
        #expect(batches.map(\.isLast) == Array(repeating: false, count: batches.count - 1) + [true])
    }

    @Test func outOfOrderPushes_areBufferedUpToTheCap_andTheGapIsFetched() throws {
        let me = Fixtures.identity(10)
        let node = TestNode("B", identity: me, store: try Fixtures.store(partitions: [lobby]), peer: Fixtures.identity(11).id)
        try node.start()
        try node.receive(
            SyncMessage.summary(more: false, entries: [SummaryEntry(lobby, digest: try node.store.log.digest(lobby.id), revealDescriptor: false)]).encode())
        var factory = OpFactory()
        let ops = (0..<101).map { factory.make(post("\($0)"), in: lobby.id, by: mallory) }
        // The first push was lost: 2...101 arrive.
        for op in ops[1...] { try node.receive(SyncMessage.newOp(op).encode()) }
        let key = ChainKey(partition: lobby.id, author: mallory.id)
        #expect(node.session.chain(key)?.pending.map(\.seq) == Array(2...65))
        #expect(node.sent.filter { $0.type == .want } == [.want(partition: lobby.id, author: mallory.id, fromSeq: 1, maxCount: 1)])
        #expect(node.session.wantsOutstanding == 1)

        try node.receive(SyncMessage.ops(OpBatch(partition: lobby.id, author: mallory.id, ops: [ops[0]], isLast: true)).encode())
        #expect(try node.store.log.opCount(lobby.id) == 65)
        #expect(node.sent.last == .want(partition: lobby.id, author: mallory.id, fromSeq: 66, maxCount: 36))
        try node.receive(SyncMessage.ops(OpBatch(partition: lobby.id, author: mallory.id, ops: Array(ops[65...]), isLast: true)).encode())
        #expect(try node.store.log.opCount(lobby.id) == 101)
        #expect(node.session.chain(key)?.pending.isEmpty == true)
        #expect(node.session.wantsOutstanding == 0, "the last OPS answered the WANT")
        #expect(node.closedWith == nil)
        #expect(node.sentCount(.newOp) == 0)
    }

    @Test func ticks_refreshSummariesEveryInterval_andNeverPingOrTimeOut() {
        var session = GossipSession()
        #expect(session.start(local: [], peer: standardHello, now: 0).last == .scheduleTick(after: 30_000))
        #expect(session.onTick(now: 12_000) == [.scheduleTick(after: 18_000)], "an early tick only re-arms")
        #expect(session.onTick(now: 30_000) == [.refreshSummaries, .scheduleTick(after: 30_000)])
        #expect(session.onLocalSummaries([], now: 30_000) == [])
        // Hours of silence: the link's keepalive decides about idleness, not the session.
        #expect(session.onTick(now: 10_000_000) == [.refreshSummaries, .scheduleTick(after: 30_000)])
        #expect(!session.isClosed)
    }

    /// On the overlay a link runs every `antiEntropyStride`-th round, at a turn set by when it
    /// came up, while each interval's upkeep goes on.
    @Test func aStride_refreshesSummariesEveryNthInterval_atTheLinksTurn() {
        var configuration = GossipConfiguration().onOverlay(activeSize: 8)
        #expect(configuration.antiEntropyStride == 4)
        configuration.antiEntropyInterval = 1_000
        for (linkUp, firstRound) in [(UInt64(0), 4), (1, 3), (2, 2), (7, 1)] {
            var session = GossipSession(configuration: configuration)
            _ = session.start(local: [], peer: standardHello, now: linkUp)
            var rounds: [Int] = []
            for interval in 1...9 where session.onTick(now: linkUp + UInt64(interval) * 1_000).contains(.refreshSummaries) {
                rounds.append(interval)
            }
            #expect(rounds == [firstRound, firstRound + 4] + (firstRound == 1 ? [9] : []), "link up at \(linkUp) ms")
        }
        #expect(GossipConfiguration().onOverlay(activeSize: nil).antiEntropyStride == 1)
        #expect(GossipConfiguration().onOverlay(activeSize: 2).antiEntropyStride == 1)
    }

    @Test func newPartition_isListedAtOnce_changedDigestsOnlyAtAntiEntropy() {
        let summary = PartitionSummary(descriptor: lobby, digest: .empty, sharing: .ifPeerHolds)
        var session = startedSession([summary])
        var changed = summary
        changed.digest = PartitionDigest(heads: [Head(author: mallory.id, maxSeq: 1, headID: OpID(Bytes32(w0: 1, w1: 0, w2: 0, w3: 0)))])
        let directory = PartitionSummary(descriptor: .directory, digest: .empty, sharing: .offer)
        #expect(
            messages(session.onLocalSummaries([changed, directory], now: 1)) == [
                .summary(more: false, entries: [SummaryEntry(.directory, digest: .empty, revealDescriptor: true)])
            ])
        _ = session.onTick(now: 30_000)
        #expect(
            messages(session.onLocalSummaries([changed, directory], now: 30_000)) == [
                .summary(more: false, entries: [SummaryEntry(lobby, digest: changed.digest, revealDescriptor: false)])
            ])
    }

    /// A session in a vector round of #lobby: this node holds nothing (its vector is loaded), the
    /// peer listed ten ops of mallory's and its vector has not come yet.
    func roundWithAPeerAhead() -> (GossipSession, [Operation]) {
        var factory = OpFactory()
        let ops = (0..<10).map { factory.make(post("\($0)"), in: lobby.id, by: mallory) }
        let summary = PartitionSummary(descriptor: lobby, digest: .empty, sharing: .ifPeerHolds)
        var session = startedSession([summary])
        let theirs = PartitionDigest(heads: [Head(author: mallory.id, maxSeq: 10, headID: ops[9].id)])
        _ = session.onMessage(.summary(more: false, entries: [SummaryEntry(lobby, digest: theirs, revealDescriptor: false)]), now: 0)
        _ = session.onLocalVector(lobby.id, heads: [], now: 0)
        return (session, ops)
    }

    @Test func aChainAnotherSessionFetches_waitsForTheRelease_thenOnlyWhatIsLeftIsFetched() throws {
        var (session, ops) = roundWithAPeerAhead()
        let planned = session.onMessage(.vector(partition: lobby.id, more: false, heads: [Head(author: mallory.id, maxSeq: 10, headID: ops[9].id)]), now: 0)
        #expect(planned.contains(.claimChain(lobby.id, author: mallory.id)))
        #expect(messages(planned).isEmpty, "no WANT before the claim is granted")

        // Another session holds the chain and fetches six ops meanwhile.
        #expect(messages(session.onChainClaim(lobby.id, author: mallory.id, granted: false, now: 1)).isEmpty)
        for op in ops[0..<6] { #expect(messages(session.onNewLocalOp(op, now: 2)).isEmpty) }
        #expect(session.onChainReleased(lobby.id, author: mallory.id, now: 3).contains(.claimChain(lobby.id, author: mallory.id)))
        let granted = session.onChainClaim(lobby.id, author: mallory.id, granted: true, now: 4)
        #expect(messages(granted) == [.want(partition: lobby.id, author: mallory.id, fromSeq: 7, maxCount: 4)])

        let batch = OpBatch(partition: lobby.id, author: mallory.id, ops: Array(ops[6...]), isLast: true)
        #expect(session.onMessage(.ops(batch), now: 5).contains(.apply(Array(ops[6...]))))
        let applied = session.onApplied(Array(ops[6...]), outcomes: Array(repeating: .applied, count: 4), now: 6)
        #expect(applied.contains(.releaseChain(lobby.id, author: mallory.id)), "done: the chain goes back")
        #expect(session.progress == (4, 4))
    }

    /// A round's local vector is loaded when it starts; ops another session fetches before the
    /// peer's vector arrives must not be fetched again from this peer.
    @Test func opsAppliedDuringAVectorRound_areNotFetchedAgain_whenTheRoundIsPlanned() throws {
        var (session, ops) = roundWithAPeerAhead()
        // Another session's fetch applies seven of the ten before the peer's vector comes.
        for op in ops[0..<7] { #expect(messages(session.onNewLocalOp(op, now: 1)).isEmpty) }
        let planned = session.onMessage(.vector(partition: lobby.id, more: false, heads: [Head(author: mallory.id, maxSeq: 10, headID: ops[9].id)]), now: 2)
        #expect(planned.contains(.claimChain(lobby.id, author: mallory.id)))
        let granted = session.onChainClaim(lobby.id, author: mallory.id, granted: true, now: 3)
        #expect(messages(granted) == [.want(partition: lobby.id, author: mallory.id, fromSeq: 8, maxCount: 3)])
        #expect(session.progress == (0, 3))
    }

    @Test func vectorRound_thePeerNeverAnswers_isDropped_andTheEntryResent() {
        let summary = PartitionSummary(descriptor: lobby, digest: .empty, sharing: .ifPeerHolds)
        var session = startedSession([summary])
        let theirs = PartitionDigest(heads: [Head(author: mallory.id, maxSeq: 1, headID: OpID(Bytes32(w0: 1, w1: 0, w2: 0, w3: 0)))])
        let entry = SummaryEntry(lobby, digest: theirs, revealDescriptor: false)
        #expect(session.onMessage(.summary(more: false, entries: [entry]), now: 0) == [.loadVector(lobby.id)])
        #expect(messages(session.onLocalVector(lobby.id, heads: [], now: 0)) == [.vector(partition: lobby.id, more: false, heads: [])])
        // No vector comes back. At the next anti-entropy round the open round is dropped and the
        // entry, still different from the peer's, is listed again so the peer can answer.
        #expect(session.onTick(now: 30_000).contains(.refreshSummaries))
        #expect(
            messages(session.onLocalSummaries([summary], now: 30_000)) == [
                .summary(more: false, entries: [SummaryEntry(lobby, digest: .empty, revealDescriptor: false)])
            ])
        #expect(session.onMessage(.summary(more: false, entries: [entry]), now: 30_001) == [.loadVector(lobby.id)])
    }
}
