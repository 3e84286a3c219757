import Identity
import Replica
import Store
import TestSupport
import Testing
import Wire

@testable import Gossip

/// Names by number (COMPACT_VECTOR, COMPACT_ANNOUNCE): a partition or author goes in full the
/// first time a side names it on a link and by number after; each side numbers in the order
/// names arrive, even in messages it then ignores; a number never given closes the link.
@Suite struct CompactNamesTests {
    let alice = Fixtures.identity(52)
    let bob = Fixtures.identity(53)
    let carol = Fixtures.identity(54)
    let compactHello = GossipConfiguration().hello

    /// A session on a link whose peer speaks names by number, holding #lobby with a digest the
    /// peer's differs from, so each SUMMARY from the peer starts a vector round.
    func session() -> GossipSession {
        var session = GossipSession()
        let local = PartitionDigest(heads: [Head(author: alice.id, maxSeq: 1, headID: OpID(Bytes32(w0: 9, w1: 9, w2: 9, w3: 9)))])
        _ = session.start(local: [PartitionSummary(descriptor: lobby, digest: local, sharing: .ifPeerHolds)], peer: compactHello, now: 0)
        return session
    }

    /// The peer lists #lobby with a digest of its own (`round` makes each one new).
    func peerSummary(round: UInt64) -> SyncMessage {
        .summary(more: false, entries: [SummaryEntry(partition: lobby.id, digest: Bytes32(w0: round, w1: 0, w2: 0, w3: 0), descriptor: nil)])
    }

    let aliceHead = Head(author: Fixtures.identity(52).id, maxSeq: 1, headID: OpID(Bytes32(w0: 9, w1: 9, w2: 9, w3: 9)))

    /// One vector round with this node's head of alice: the vector it sent.
    func round(_ session: inout GossipSession, _ number: UInt64) -> [SyncMessage] {
        #expect(session.onMessage(peerSummary(round: number), now: number).contains(.loadVector(lobby.id)))
        return messages(session.onLocalVector(lobby.id, heads: [aliceHead], now: number))
    }

    @Test func hello_announcesNamesByNumber_unlessTurnedOff() {
        #expect(GossipConfiguration().hello.features & SyncHello.compactNames != 0)
        var off = GossipConfiguration()
        off.compactNames = false
        #expect(off.hello.features & SyncHello.compactNames == 0)
    }

    @Test func namesGoInFullTheFirstTime_andByNumberAfter() {
        var session = session()
        #expect(
            round(&session, 1) == [
                .compactVector(
                    partition: .full(lobby.id.raw), more: false,
                    heads: [CompactHead(author: .full(alice.id.raw), maxSeq: 1, headID: aliceHead.headID, frozenAt: nil)])
            ])
        _ = session.onMessage(.compactVector(partition: .full(lobby.id.raw), more: false, heads: []), now: 1)
        #expect(
            round(&session, 2) == [
                .compactVector(
                    partition: .number(1), more: false, heads: [CompactHead(author: .number(2), maxSeq: 1, headID: aliceHead.headID, frozenAt: nil)])
            ])
    }

    @Test func peerNumbers_resolveToWhatItSentInFull_evenInAMessageThisSessionIgnored() {
        var session = session()
        _ = round(&session, 1)
        // An announcement this session ignores (no broadcast tree here) still numbers its names:
        // carol's room is 1, bob is 2; #lobby then becomes 3.
        let carols = PartitionDescriptor.room(RoomName("carols")!)
        let ignored = session.onMessage(
            .compactAnnounce(partition: .full(carols.id.raw), heads: [CompactAnnouncedHead(author: .full(bob.id.raw), seq: 4)]), now: 1)
        #expect(ignored.isEmpty)
        let bobsHead = CompactHead(author: .number(2), maxSeq: 4, headID: OpID(Bytes32(w0: 7, w1: 7, w2: 7, w3: 7)), frozenAt: nil)
        let planned = session.onMessage(.compactVector(partition: .full(lobby.id.raw), more: false, heads: [bobsHead]), now: 1)
        #expect(planned.contains(.claimChain(lobby.id, author: bob.id)), "bob is ahead: fetched")
        #expect(closeReason(planned) == nil)
        // The next round's vector from the peer names #lobby by its number, 3.
        _ = round(&session, 2)
        let next = session.onMessage(.compactVector(partition: .number(3), more: false, heads: [bobsHead]), now: 2)
        #expect(closeReason(next) == nil)
    }

    @Test func skipAndResume_goByNumber_andAreHonoured() {
        var session = sessionInSync(with: compactHello)
        #expect(
            messages(session.onRedundantPush(lobby.id, author: bob.id, now: 1)) == [
                .compactSkip([CompactChain(partition: .full(lobby.id.raw), author: .full(bob.id.raw))])
            ])
        let alices = ChainKey(partition: lobby.id, author: alice.id)
        _ = session.onMessage(.compactSkip([CompactChain(partition: .full(lobby.id.raw), author: .full(alice.id.raw))]), now: 2)
        #expect(session.skippedByPeer.contains(alices))
        _ = session.onMessage(.compactResume([CompactChain(partition: .number(1), author: .number(2))]), now: 3)
        #expect(!session.skippedByPeer.contains(alices))
    }

    @Test func aNumberThePeerNeverGave_closesTheLink() {
        var session = session()
        _ = round(&session, 1)
        _ = session.onMessage(.compactVector(partition: .full(lobby.id.raw), more: false, heads: []), now: 1)
        let directives = session.onMessage(
            .compactAnnounce(partition: .number(1), heads: [CompactAnnouncedHead(author: .number(2), seq: 1)]), now: 1)
        #expect(closeReason(directives) == .malformedMessage(.unknownLinkName(2)))
    }

    @Test func aPeerWithoutTheFeature_getsPlainVectors() {
        var session = GossipSession()
        _ = session.start(local: [PartitionSummary(descriptor: lobby, digest: .empty, sharing: .ifPeerHolds)], peer: standardHello, now: 0)
        _ = session.onMessage(peerSummary(round: 1), now: 1)
        #expect(messages(session.onLocalVector(lobby.id, heads: [aliceHead], now: 1)) == [.vector(partition: lobby.id, more: false, heads: [aliceHead])])
    }

    /// Two heads at one seq whose ids differ past their first 16 bytes are one op to a compact
    /// vector; differing within them, a fork probe goes out as with full ids.
    @Test func headsAtOneSeq_areComparedByTheFirst16BytesOfTheirIds() {
        let mine = Head(author: bob.id, maxSeq: 3, headID: OpID(Bytes32(w0: 1, w1: 2, w2: 3, w3: 4)))
        #expect(mine.sameOp(as: Head(author: bob.id, maxSeq: 3, headID: OpID(Bytes32(w0: 1, w1: 2, w2: 0, w3: 0)))))
        #expect(!mine.sameOp(as: Head(author: bob.id, maxSeq: 3, headID: OpID(Bytes32(w0: 1, w1: 5, w2: 3, w3: 4)))))
    }

    /// Two real stores, each with posts the other lacks, converge over compact vectors; in the
    /// second round, whose names all went in full in the first, a compact vector takes under
    /// half the bytes of a plain one.
    @Test func twoStores_convergeOverCompactVectors_theSecondRoundInUnderHalfTheBytes() throws {
        func sync(compact: Bool) throws -> (secondRoundBytes: Int, converged: Bool, plainSent: Bool) {
            var configuration = GossipConfiguration()
            configuration.compactNames = compact
            let (storeA, storeB) = (try Fixtures.store(partitions: [lobby]), try Fixtures.store(partitions: [lobby]))
            var factory = OpFactory()
            let authors = (0..<20).map { Fixtures.identity(UInt8(60 + $0)) }
            let common = makeOps(&factory, in: lobby, authors: authors, perAuthor: 2)
            try load(storeA, common)
            try load(storeB, common)
            /// Posts only `store` holds, by each of `authors` (the other side lacks them).
            func extra(_ store: ReplicaStore, _ authors: ArraySlice<Identity>) throws {
                try load(store, makeOps(&factory, in: lobby, authors: Array(authors), perAuthor: 1))
            }
            try extra(storeA, authors[0..<10])
            try extra(storeB, authors[10...])
            let link = makeLink(storeA, storeB, configuration: configuration)
            link.a.peerHello = configuration.hello
            link.b.peerHello = configuration.hello
            try link.connect()
            // Round two: new posts written without a push, then A re-lists its changed digest.
            try extra(storeA, authors[0..<10])
            try extra(storeB, authors[10...])
            let sentBefore = (link.a.sent.count, link.b.sent.count)
            try link.a.run(link.a.session.onLocalSummaries(link.a.summaries(), resendChanged: true, now: link.a.now))
            try link.settle()
            let secondRound = link.a.sent[sentBefore.0...] + link.b.sent[sentBefore.1...]
            let vectors = secondRound.filter { $0.type == .vector || $0.type == .compactVector }
            let converged = try storeA.log.digest(lobby.id) == storeB.log.digest(lobby.id) && storeA.log.opCount() == 80
            let plainSent = (link.a.sent + link.b.sent).contains { $0.type == .vector }
            return (vectors.reduce(0) { $0 + $1.encode().count }, converged, plainSent)
        }
        let plain = try sync(compact: false)
        let compact = try sync(compact: true)
        #expect(plain.converged && compact.converged)
        #expect(plain.plainSent && !compact.plainSent)
        #expect(
            compact.secondRoundBytes > 0 && compact.secondRoundBytes * 2 < plain.secondRoundBytes,
            "compact \(compact.secondRoundBytes) bytes, plain \(plain.secondRoundBytes)")
    }
}
