import Identity
import Replica
import Wire

/// Anti-entropy and live push over one link, as a pure state machine (docs/DESIGN.md §4.3,
/// §4.3.2). The node keeps one session per linked peer and fans out.
///
/// The session owns no socket, store, timer or clock. The shell feeds it events — `start`,
/// `onFrame` (or `onMessage`), the answers to its load and apply directives, `onNewLocalOp`,
/// `onLocalForkProof`, `onTick` — each with the shell's monotonic clock in milliseconds, and
/// carries out the returned `GossipDirective`s in order.
///
/// The session starts when the link is ready: HELLO, keepalive and BYE are the link's
/// (NodeRuntime's `LinkMessage`); the peer's `SyncHello` rides at the end of the link's HELLO and
/// is handed to `start`, so no sync message precedes SUMMARY and the session keeps no idle timer.
///
/// Protocol rules it follows:
/// - Both sides send SUMMARY at once.
/// - A partition is synced on the link when both sides list it. For each entry received whose
///   digest equals ours, nothing more is sent (in sync: one SUMMARY each way). Where digests
///   differ, both sides exchange VECTORs.
/// - For each author where the peer is ahead, the session sends WANT(from = local max + 1,
///   credit ≤ 256) and the next WANT only after the ops of the last one were applied, so a node
///   behind by k ops receives exactly k. At most `maxOutstandingWants` chains are fetched at once.
///   Before its first WANT for a chain the session asks the node (`.claimChain`), which lets
///   one session at a time fetch a chain, so ops several peers offer arrive once.
/// - A WANT is answered with OPS batches read from the store in steps of `loadBatch`, each batch
///   within the peer's frame; the last batch of the answer says so (`OpBatch.isLast`).
/// - Different head ids at an equal seq, or a peer op that does not link to our head, lead to a
///   fork probe (a WANT for the peer's op at that seq); the store then finds the fork and the
///   proof is sent as FORK. A vector showing that the peer lacks a proof this node holds makes
///   the session send it.
/// - Live push (EBT-style): a new local op goes out as NEW_OP only when the peer is known to
///   hold exactly the op before it; otherwise anti-entropy fetches it. A NEW_OP that arrives
///   ahead of the chain is kept (at most `maxPendingPerChain` per chain) while a WANT fills the gap.
/// - Push control (both sides announce `SyncHello.pushControl`): a chain the peer sent SKIP for
///   is not pushed until it sends RESUME; after RESUME the next op is pushed even ahead of what
///   the peer is known to hold. The session sends SKIP when the node finds the peer's push
///   redundant (`onRedundantPush`), and RESUME when the chain's pusher is lost (`onPushersLost`)
///   or a vector round shows the skipped peer ahead.
/// - Broadcast tree (both sides announce `SyncHello.treePush`; then SKIP and RESUME are not
///   used): a NEW_OP that brings an op already held makes the session PRUNE the partition, and
///   a PRUNE received does the same, so the link stops pushing that partition either way and
///   announces it instead (ANNOUNCE, gathered for `announceDelay`). A gap learned from an
///   ANNOUNCE, or a small one from a vector, is fetched only if the tree has not filled it within
///   `graftTimeout`; fetching a partition over a pruned link first sends GRAFT, which puts the
///   link back on the partition's tree both ways.
/// - Pacing: one author's NEW_OPs go out at most at `pushPacing` of `authorPushRate`; an op held
///   back starts a vector round (and another after it while ops are held back), so the peer
///   fetches the rest with WANTs. The peer's NEW_OPs beyond `authorPushRate` close the link.
/// - Every `antiEntropyInterval` the session asks for fresh summaries and re-sends the entries
///   whose digest changed since it last sent them, or that still differ from the peer's.
/// - Names by number (both sides announce `SyncHello.compactNames`): VECTOR, ANNOUNCE, SKIP and
///   RESUME go out compact, naming partitions and authors by the number they got on the link
///   (`LinkNames`); the compact messages received are expanded before anything else reads them.
///   The shell MUST send every `.send` in order (dropping one would put the numbering out of
///   step), as a link does; NEW_OP, which names nothing by number, is the only one it may drop.
/// - The peer's link closes (`.close`) for: a malformed frame; a WANT, OPS or NEW_OP in a
///   partition never offered to it; OPS not asked for or beyond the credit; too many WANTs
///   queued; more than `maxInvalidOps` ops that fail validation; one author's NEW_OPs past
///   `authorPushRate`. A peer whose `SyncHello` this
///   build cannot speak is closed at `start` (`incompatiblePeer`, not a violation).
///
/// What the shell MUST do:
/// - start the session when the link is ready, with the peer's `SyncHello`;
/// - compute each partition's `Sharing` for this peer with `SyncPolicy`, for `start` and for
///   every `.refreshSummaries` (and call `onLocalSummaries` when the node carries a new partition);
/// - answer every `.loadVector`, `.loadOps`, `.loadForkProofs`, `.refreshSummaries` and
///   `.apply` exactly once with its event, in the order the directives were given;
/// - after applying, call `onNewLocalOp` of every session (this one included) for each op whose
///   outcome is `.applied`, in order; likewise after writing a local op; and pass each new fork
///   proof (from `.forkDetected` or a `.applyForkProof` that changed something) to
///   `onLocalForkProof` of every session;
/// - keep one pusher per chain from `.pushReceived` (the author when linked, else the first
///   link to deliver it), call `onRedundantPush` of a session whose duplicate push came from
///   another link than the pusher, and `onPushersLost` of every session when a pusher's link ends;
/// - keep one timer, re-armed by each `.scheduleTick(after:)`, and call `onTick` when it fires;
/// - grant each `.claimChain` unless another session holds that chain, remembering who was
///   refused; on `.releaseChain`, or when the holder's link ends, call `onChainReleased` of
///   each session refused meanwhile.
public struct GossipSession: Sendable {
    enum Phase: Sendable { case idle, running, closed }

    public let configuration: GossipConfiguration
    var phase = Phase.idle
    /// The latest clock reading passed in.
    var now: UInt64 = 0
    /// Directives of the event being handled.
    var outbox: [GossipDirective] = []

    // What this node offers the peer.
    var local: [PartitionID: PartitionSummary] = [:] {
        didSet { localSharing = local.mapValues(\.sharing) }
    }
    /// `local`'s sharing alone, kept with it. Live push asks it for every applied op in every
    /// session, and `local[id]?.sharing` copied and destroyed the whole summary (descriptor and
    /// digest) each time, an eighth of `onNewLocalOp`'s instructions.
    private(set) var localSharing: [PartitionID: Sharing] = [:]
    /// Every partition listed to the peer on this link, with the digest last sent.
    var sentDigests: [PartitionID: Bytes32] = [:]
    var antiEntropyDue = false

    // What the peer listed.
    var peerMaxFrame = GossipConfiguration.minimumFrameBytes
    var peerListed: [PartitionID: Bytes32] = [:]
    var learnRequested: Set<PartitionID> = []

    // Partitions synced on this link.
    var shared: [PartitionID: SharedPartition] = [:]
    var chainCount = 0
    /// Heads of peer vectors held until their round is planned (bounded by `maxChains`).
    var bufferedRemoteHeads = 0

    // Fetching from the peer.
    var wantQueue = Queue<ChainKey>()
    var outstandingWants = 0
    var invalidOps = 0
    var fetched = 0
    /// Ops known to be missing: the sum of every remembered chain's `Chain.gap`, kept by
    /// `setChain` and `removeChain`.
    var missing = 0
    var reportedProgress = (fetched: 0, wanted: 0)
    /// Counters for the shell's reports.
    public internal(set) var statistics = GossipStatistics()

    // Serving the peer.
    var peerWants = Queue<PeerWant>()
    var serving: Serving?

    /// Fork proofs the peer has (it sent them, or this session did), by chain and seq.
    var forksKnownByPeer: Set<ForkPoint> = []

    // Live push control and rates (`+PushControl`).
    /// Both sides announced push control: SKIP and RESUME may be sent and are honoured.
    var pushControl = false
    /// Chains the peer asked this session not to push; `skippedOrder` holds them oldest first
    /// (with stale entries of chains resumed since, dropped as they come up).
    var skippedByPeer: Set<ChainKey> = []
    var skippedOrder = Queue<ChainKey>()
    /// Chains this session asked the peer to skip, so it can RESUME them.
    var skipsSent: Set<ChainKey> = []
    /// NEW_OPs received per author (beyond `authorPushRate`: a flood) and sent per author
    /// (paced at `pushPacing` of it).
    var pushesReceived: AuthorRates
    var pushesSent: AuthorRates
    /// Partitions with pushes held back by pacing during a vector round: another round follows.
    var pacedPartitions: Set<PartitionID> = []

    // The broadcast tree (`+Tree`).
    /// Both sides announced the broadcast tree: PRUNE, GRAFT and ANNOUNCE replace SKIP and RESUME.
    var treePush = false
    /// Partitions this link is a lazy link of (pruned by either side): their new ops are
    /// announced, not pushed.
    var lazyPartitions: Set<PartitionID> = []
    /// Announcements for the next ANNOUNCE: each chain's newest seq, by partition; at most
    /// `maxChains` in all (beyond, the peer learns of the op at the next vector round).
    var announcements: [PartitionID: [UserID: UInt64]] = [:]
    var announcementCount = 0
    /// When the gathered announcements go out.
    var announceDue: UInt64?
    /// Chains with a `Chain.graftAt`: the peer holds ops this node lacks, fetched from it only
    /// if the tree has not brought them by then.
    var graftWaiting: Set<ChainKey> = []
    /// The earliest `graftAt` of `graftWaiting` (a tick then fetches what is still missing).
    var graftCheckAt: UInt64?
    /// The wake-up last asked of the shell with `.scheduleTick` (one timer, re-armed by each).
    var wakeAt: UInt64 = .max

    // Names by number (`LinkNames`).
    /// Both sides announced `SyncHello.compactNames`: VECTOR, ANNOUNCE, SKIP and RESUME go compact.
    var compactNames = false
    var namesSent = SentLinkNames()
    var namesReceived = ReceivedLinkNames()

    // Timers.
    var nextAntiEntropy: UInt64 = 0
    /// Anti-entropy intervals passed; a round runs when it is a multiple of the stride.
    var antiEntropyIntervals = 0

    public init(configuration: GossipConfiguration = GossipConfiguration()) {
        configuration.validate()
        self.configuration = configuration
        pushesReceived = AuthorRates(rate: configuration.authorPushRate, capacity: configuration.maxRateTrackedAuthors, evictsUnrefilled: true)
        pushesSent = AuthorRates(
            rate: configuration.authorPushRate.scaled(by: configuration.pushPacing), capacity: configuration.maxRateTrackedAuthors,
            evictsUnrefilled: false)
    }

    /// Whether the link is over (closed by either side); later events return nothing.
    public var isClosed: Bool { phase == .closed }

    /// Ops fetched from this peer so far, and that number plus the ops known to be missing.
    public var progress: (fetched: Int, wanted: Int) { (fetched, fetched + missing) }
    /// WANTs sent to the peer whose last OPS has not come yet.
    public var wantsOutstanding: Int { outstandingWants }

    // MARK: - Start

    /// Starts the session on a ready link, given the peer's `SyncHello` (from its link HELLO):
    /// sends the SUMMARY of `summaries` (every partition with its sharing for this peer; `.never`
    /// ones are not listed). The peer MUST speak version 2 or later (`GossipConfiguration.protocolVersion`;
    /// a later version is expected to speak down to 2) and accept frames that hold one largest
    /// op; otherwise the link closes.
    public mutating func start(local summaries: [PartitionSummary], peer: SyncHello, now: UInt64) -> [GossipDirective] {
        guard phase == .idle else { preconditionFailure("invalid state \(phase): start called twice") }
        phase = .running
        self.now = now
        nextAntiEntropy = now + configuration.antiEntropyInterval
        // The link-up time picks this link's round within the stride: links that come up
        // together still take turns.
        antiEntropyIntervals = Int(now % UInt64(configuration.antiEntropyStride))
        guard peer.protocolVersion >= GossipConfiguration.protocolVersion else {
            close(.incompatiblePeer("sync protocol version \(peer.protocolVersion)"))
            return finish()
        }
        guard Int(peer.maxFrame) >= GossipConfiguration.minimumFrameBytes else {
            close(.incompatiblePeer("frames of \(peer.maxFrame) bytes cannot hold one op"))
            return finish()
        }
        peerMaxFrame = min(Int(peer.maxFrame), configuration.maxFrameBytes)
        pushControl = configuration.pushControl && peer.features & SyncHello.pushControl != 0
        treePush = configuration.treePush && peer.features & SyncHello.treePush != 0
        compactNames = configuration.compactNames && peer.features & SyncHello.compactNames != 0
        local.merge(summaries.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        sendSummary(of: summaries.map(\.id), evenIfEmpty: true)
        scheduleWake(always: true)
        return finish()
    }

    /// The node's current summaries for this peer (the answer to `.refreshSummaries`, or news:
    /// a partition newly carried, a sharing changed). New partitions are listed at once; after
    /// `.refreshSummaries`, entries whose digest changed are re-sent too. `resendChanged` does
    /// the same at once: for a bulk local change (an import) whose ops were not handed over one
    /// by one with `onNewLocalOp`, so the peer fetches them with WANTs.
    public mutating func onLocalSummaries(
        _ summaries: [PartitionSummary], resendChanged: Bool = false, now: UInt64
    )
        -> [GossipDirective]
    {
        guard begin(now) else { return [] }
        if resendChanged { antiEntropyDue = true }
        local = Dictionary(summaries.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        var toSend: [PartitionID] = []
        for summary in summaries where summary.sharing != .never {
            let id = summary.id
            guard let sent = sentDigests[id] else {
                toSend.append(id)
                continue
            }
            guard antiEntropyDue else { continue }
            let stillDiffers = peerListed[id].map { $0 != summary.digest.raw } ?? false
            if sent != summary.digest.raw || (stillDiffers && shared[id]?.exchange == nil) { toSend.append(id) }
        }
        antiEntropyDue = false
        sendSummary(of: toSend, evenIfEmpty: false)
        return finish()
    }

    // MARK: - Helpers

    /// Starts handling an event: false once the link is over.
    mutating func begin(_ now: UInt64) -> Bool {
        switch phase {
        case .idle: preconditionFailure("invalid state \(phase): an event before start")
        case .closed: return false
        case .running:
            self.now = max(self.now, now)
            return true
        }
    }

    /// Ends an event: reports progress if it moved, and hands over the directives.
    mutating func finish() -> [GossipDirective] {
        if phase != .closed, progress != reportedProgress {
            reportedProgress = progress
            outbox.append(.progress(fetched: progress.fetched, wanted: progress.wanted))
        }
        defer { outbox = [] }
        return outbox
    }

    mutating func emit(_ directive: GossipDirective) {
        guard phase != .closed else { return }
        outbox.append(directive)
    }

    mutating func send(_ message: SyncMessage) {
        guard phase != .closed else { return }
        outbox.append(.send(compacted(message)))
        switch message {
        case .ops(let batch): statistics.opsSent += batch.ops.count
        case .newOp: statistics.opsSent += 1
        case .skip(let chains): statistics.skipsSent += chains.count
        case .resume(let chains): statistics.resumesSent += chains.count
        case .prune(let partitions): statistics.prunesSent += partitions.count
        case .graft(let partitions): statistics.graftsSent += partitions.count
        case .announce(_, let heads): statistics.headsAnnounced += heads.count
        default: break
        }
    }

    /// Ends the link (the link layer says BYE).
    mutating func close(_ error: GossipError) {
        guard phase != .closed else { return }
        outbox.append(.close(reason: error))
        phase = .closed
    }

    /// Lists partitions to the peer, in pages within the peer's frame.
    mutating func sendSummary(of ids: [PartitionID], evenIfEmpty: Bool) {
        var entries: [SummaryEntry] = []
        for id in ids {
            guard let summary = local[id], summary.sharing != .never else { continue }
            let newlyListed = sentDigests[id] == nil
            entries.append(SummaryEntry(summary.descriptor, digest: summary.digest, revealDescriptor: summary.sharing == .offer))
            sentDigests[id] = summary.digest.raw
            if newlyListed { linkIfBothList(id) }
        }
        guard !entries.isEmpty || evenIfEmpty else { return }
        let budget = peerMaxFrame - SyncMessage.summaryPrefixBytes
        var page: [SummaryEntry] = []
        var pageBytes = 0
        for entry in entries {
            let size = SyncMessage.encodedSize(of: entry)
            if page.count == SyncMessage.maxSummaryEntries || pageBytes + size > budget {
                send(.summary(more: true, entries: page))
                (page, pageBytes) = ([], 0)
            }
            page.append(entry)
            pageBytes += size
        }
        send(.summary(more: false, entries: page))
    }

    /// Makes a partition synced once both sides list it. The side that receives a differing
    /// entry starts the vector round; equal digests mean the peer holds what we hold.
    mutating func linkIfBothList(_ id: PartitionID) {
        guard let summary = local[id], summary.sharing != .never, sentDigests[id] != nil, let theirs = peerListed[id] else { return }
        var partition = shared[id] ?? SharedPartition(remoteDigest: theirs)
        partition.remoteDigest = theirs
        shared[id] = partition
        if theirs == summary.digest.raw, partition.exchange == nil { markInSync(id) }
    }

    /// Equal digests: the peer holds exactly what this node holds, so per-chain knowledge of its
    /// heads gives way to the baseline (and idle chains are forgotten).
    mutating func markInSync(_ id: PartitionID) {
        guard var partition = shared[id] else { return }
        partition.baseline = .sameAsLocal
        shared[id] = partition
        for (author, var chain) in partition.chains {
            let key = ChainKey(partition: id, author: author)
            chain.peerSeq = nil
            chain.blocked = false
            chain.resumed = false
            chain.heldBack = false
            if chain.isForgettable {
                removeChain(key)
            } else {
                setChain(key, chain)
                releaseIfDone(key)
            }
        }
    }
}

/// What a session counted on its link, for the shell's reports (`parley status`).
public struct GossipStatistics: Hashable, Sendable {
    /// Ops received in OPS and NEW_OP messages (valid or not, new or not).
    public var opsReceived = 0
    /// Ops sent in OPS and NEW_OP messages.
    public var opsSent = 0
    /// Chains this node asked the peer to stop pushing (SKIP), and to push again (RESUME).
    public var skipsSent = 0
    public var resumesSent = 0
    /// Chains the peer asked this node to stop pushing (SKIP).
    public var skipsReceived = 0
    /// New ops not pushed because this author's pushes on the link reached the pacing rate.
    public var pushesPaced = 0
    /// Partitions this node took off the link's broadcast tree (PRUNE) and put back (GRAFT),
    /// and chain heads it announced on the link (ANNOUNCE).
    public var prunesSent = 0
    public var graftsSent = 0
    public var headsAnnounced = 0

    public init() {}
}
