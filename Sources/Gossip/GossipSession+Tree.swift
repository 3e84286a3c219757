import Identity
import Replica

/// The broadcast tree, after Plumtree (Leitão, Pereira and Rodrigues, 2007): eager push along a
/// tree that forms itself, lazy announcements on the other links (docs/DESIGN.md §4.3.3).
///
/// In an overlay every node relays what it applies to every neighbour, so without it each op
/// reaches each node once per link. Per partition, a link is *eager* (NEW_OP) until one side
/// sees it bring an op already held; that side sends PRUNE and the link turns *lazy* both ways:
/// new ops are announced (ANNOUNCE, each chain's newest seq, gathered for `announceDelay`), not
/// pushed. The eager links left form a tree along which each op reaches each node about once.
/// When the tree breaks (a node leaves, two prunes cut a cycle twice), announcements show what
/// is missing: a gap still open `graftTimeout` after it was announced is fetched from the
/// announcer with WANT, and the link is put back on the tree first (GRAFT), so the next ops
/// come that way. Anti-entropy remains the safety net.
///
/// One tree serves every author of a partition, unlike SKIP (one pusher per chain), which must
/// learn each chain apart: with a thousand authors writing a few posts each, per-chain learning
/// cost more copies than the posts themselves.
extension GossipSession {
    /// A gap in a vector on a lazy link at most this many ops behind is in flight on the tree
    /// most likely, and waits `graftTimeout` like an announced one; a larger gap, or one on a
    /// link of the tree, is fetched at once.
    static let treeGapOps: UInt64 = 8

    /// Whether new ops of the partition go to the peer as announcements, not pushes.
    func isLazy(_ id: PartitionID) -> Bool {
        treePush && lazyPartitions.contains(id)
    }

    /// A NEW_OP brought an op this node already held: the link leaves the partition's tree.
    mutating func pruneRedundant(_ id: PartitionID) {
        guard treePush, shared[id] != nil, lazyPartitions.insert(id).inserted else { return }
        send(.prune([id]))
    }

    /// PRUNE from the peer: the link leaves those partitions' trees (announce, do not push).
    mutating func receivePrune(_ partitions: [PartitionID]) {
        guard treePush else { return }
        for id in partitions where shared[id] != nil { lazyPartitions.insert(id) }
    }

    /// GRAFT from the peer: the link is back on those partitions' trees (push again; the peer
    /// fetches what it lacks with WANTs).
    mutating func receiveGraft(_ partitions: [PartitionID]) {
        guard treePush else { return }
        for id in partitions { lazyPartitions.remove(id) }
    }

    /// Before fetching a chain over a lazy link: the link rejoins the partition's tree.
    mutating func graftIfLazy(_ id: PartitionID) {
        guard isLazy(id) else { return }
        lazyPartitions.remove(id)
        send(.graft([id]))
    }

    // MARK: - Announcing

    /// Gathers an announcement of op `seq` of `key`'s chain for the next ANNOUNCE.
    mutating func announce(_ key: ChainKey, seq: UInt64) {
        if let known = announcements[key.partition]?[key.author] {
            if seq > known { announcements[key.partition]?[key.author] = seq }
        } else {
            guard announcementCount < configuration.maxChains else { return }
            announcementCount += 1
            announcements[key.partition, default: [:]][key.author] = seq
        }
        if announceDue == nil {
            announceDue = now + configuration.announceDelay
            scheduleWake()
        }
    }

    /// Sends the gathered announcements (what the peer is not known to hold by now), in pages.
    mutating func flushAnnouncements() {
        let gathered = announcements
        (announcements, announcementCount, announceDue) = ([:], 0, nil)
        for (id, heads) in gathered.sorted(by: { $0.key < $1.key }) where shared[id] != nil {
            var page: [AnnouncedHead] = []
            for (author, seq) in heads.sorted(by: { $0.key < $1.key }) {
                let known = chain(ChainKey(partition: id, author: author))?.peerSeq ?? 0
                guard known < seq else { continue }
                page.append(AnnouncedHead(author: author, seq: seq))
                if page.count == SyncMessage.maxAnnouncedHeads {
                    send(.announce(partition: id, heads: page))
                    page = []
                }
            }
            if !page.isEmpty { send(.announce(partition: id, heads: page)) }
        }
    }

    // MARK: - Announcements received

    /// ANNOUNCE from the peer: it holds these chains up to these seqs. What this node lacks is
    /// fetched from the peer after `graftTimeout` unless the tree brings it first. A chain this
    /// session knows nothing of is taken to lack only the announced op (a wrong guess costs one
    /// WANT: a duplicate, or an op that shows where the gap starts).
    mutating func receiveAnnounce(_ id: PartitionID, heads: [AnnouncedHead]) {
        guard treePush, shared[id] != nil else { return }
        for head in heads {
            let key = ChainKey(partition: id, author: head.author)
            var chain = self.chain(key) ?? Chain()
            guard !chain.frozen else { continue }
            chain.peerSeq = max(chain.peerSeq ?? 0, head.seq)
            if chain.localSeq == nil { chain.localSeq = head.seq - 1 }
            awaitTree(key, &chain)
            setChain(key, chain)
        }
    }

    /// A gap the tree is expected to fill: it is fetched only from `graftTimeout` on. At most
    /// `maxChains` gaps wait (a peer's announcements cannot grow the set past it); beyond, a gap
    /// is fetched at once.
    mutating func awaitTree(_ key: ChainKey, _ chain: inout Chain) {
        guard chain.graftAt == nil, (chain.peerSeq ?? 0) > (chain.localSeq ?? 0), graftWaiting.count < configuration.maxChains else {
            return
        }
        let due = now + configuration.graftTimeout
        chain.graftAt = due
        graftWaiting.insert(key)
        if graftCheckAt.map({ due < $0 }) ?? true {
            graftCheckAt = due
            scheduleWake()
        }
    }

    /// Gaps whose wait is over: what the tree has not filled is fetched from the peer now.
    mutating func fetchOverdueGrafts() {
        guard let check = graftCheckAt, check <= now else { return }
        graftCheckAt = nil
        for key in graftWaiting.sorted() {
            guard var chain = chain(key), let due = chain.graftAt else {
                graftWaiting.remove(key)
                continue
            }
            guard due <= now else {
                graftCheckAt = min(graftCheckAt ?? due, due)
                continue
            }
            chain.graftAt = nil
            graftWaiting.remove(key)
            setChain(key, chain)
            advance(key)
        }
        pumpWants()
    }
}
