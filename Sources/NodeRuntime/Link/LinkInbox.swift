import LinkProtocol
import Synchronization

/// What the links read and the node has not handled yet: group commit across links.
///
/// Each link's read task posts the messages of one read here, then awaits the node's
/// `drainInbox`. One drain handles everything posted so far, from every link, in one store
/// transaction, so when the node is busy the reads that queue up behind it share a commit (one
/// WAL append of the pages they touch) instead of paying one each. A link's messages stay in
/// order, and a link reads again only after its messages were handled: the drain that the
/// poster awaits runs after its post, on the node, so either it or an earlier drain took them.
final class LinkInbox: Sendable {
    /// The messages of one read from one link.
    struct Batch: Sendable {
        let link: LinkID
        let messages: [LinkMessage]
    }

    private let pending = Mutex<[Batch]>([])

    /// Queues the messages of one read from `link`.
    func post(_ messages: [LinkMessage], from link: LinkID) {
        pending.withLock { $0.append(Batch(link: link, messages: messages)) }
    }

    /// Takes batches in the order posted, whole, until they hold at least `limit` messages (or
    /// none are left): a drain under a flood still ends its transaction now and then.
    func take(upTo limit: Int) -> [Batch] {
        pending.withLock { pending in
            var count = 0
            var taken = 0
            while taken < pending.count, count < limit {
                count += pending[taken].messages.count
                taken += 1
            }
            defer { pending.removeFirst(taken) }
            return Array(pending[..<taken])
        }
    }
}
