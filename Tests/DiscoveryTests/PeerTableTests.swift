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
}
