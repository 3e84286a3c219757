import LinkProtocol
import Testing

@testable import NodeRuntime

@Suite struct LinkInboxTests {
    private func pings(_ count: Int, from first: UInt64) -> [LinkMessage] {
        (0..<UInt64(count)).map { .ping(nonce: first + $0) }
    }

    /// What one drain takes: whole reads in the order posted, from every link, until the limit.
    @Test func take_returnsWholeReadsInPostingOrder_untilTheLimitIsReached() {
        let inbox = LinkInbox()
        let (a, b) = (LinkID(raw: 1), LinkID(raw: 2))
        inbox.post(pings(3, from: 10), from: a)
        inbox.post(pings(2, from: 20), from: b)
        inbox.post(pings(4, from: 30), from: a)

        let first = inbox.take(upTo: 4)
        #expect(first.map(\.link) == [a, b], "a read is never split, so the limit may be passed by one read")
        #expect(first.flatMap(\.messages) == pings(3, from: 10) + pings(2, from: 20))
        let rest = inbox.take(upTo: 4)
        #expect(rest.map(\.link) == [a])
        #expect(rest.flatMap(\.messages) == pings(4, from: 30))
        #expect(inbox.take(upTo: 4).isEmpty)
    }

    @Test func take_fromAnEmptyInbox_isEmpty() {
        #expect(LinkInbox().take(upTo: 256).isEmpty)
    }
}
