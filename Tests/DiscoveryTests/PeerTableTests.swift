import Identity
import TestSupport
import Testing

@testable import Discovery

/// The peer table keeps its counts (links up, static peers, gone peers) as records change: the
/// overlay and the table limit read them on every beacon, instead of counting the table.
@Suite struct PeerTableTests {
    @Test func counts_followEveryKindOfChange_andEqualARecount() {
        var random = SeededRandom(seed: SeededRandom.announce("peerTableCounts"))
        var table = PeerTable()
        let ids = (0..<20).map { user(UInt64($0)) }
        for _ in 0..<3_000 {
            let id = ids[Int(random.next() % UInt64(ids.count))]
            var record = table[id] ?? PeerRecord(id: id, origin: .beacon, now: 0)
            switch random.next() % 5 {
            case 0: table[id] = nil
            case 1:
                record.link = record.link == nil ? LinkRecord(since: 1, lastPing: 1) : nil
                table[id] = record
            case 2:
                record.staticEndpoints = record.isStatic ? [] : [lanHost(1)]
                table[id] = record
            case 3:
                record.state = PeerState.allCases[Int(random.next() % UInt64(PeerState.allCases.count))]
                table[id] = record
            default:
                table[id]?.link = nil  // in place, through the optional
            }
            #expect(table.linkedCount == table.values.filter { $0.link != nil }.count)
            #expect(table.staticCount == table.values.filter(\.isStatic).count)
            #expect(table.goneCount == table.values.filter { $0.state == .gone }.count)
        }
    }

    /// A walk's "no room" holds until an entry is removed or a link ends (either may make room);
    /// other changes (a beacon refreshing an entry, a link coming up) keep it.
    @Test func fullUntil_endsWhenAnEntryGoesOrALinkEnds_only() {
        var table = PeerTable()
        var linked = PeerRecord(id: user(1), origin: .beacon, now: 0)
        linked.link = LinkRecord(since: 1, lastPing: 1)
        table[user(1)] = linked
        table[user(2)] = PeerRecord(id: user(2), origin: .beacon, now: 0)
        table.fullUntil = 1_000
        var refreshed = table[user(2)]!
        refreshed.lastSeen = 500
        table[user(2)] = refreshed
        table[user(3)] = PeerRecord(id: user(3), origin: .beacon, now: 0)
        #expect(table.fullUntil == 1_000)
        var unlinked = linked
        unlinked.link = nil
        table[user(1)] = unlinked
        #expect(table.fullUntil == nil)
        table.fullUntil = 2_000
        table[user(3)] = nil
        #expect(table.fullUntil == nil)
    }
}
