import Identity
import Replica
import Wire

/// Where an author forked: a fork proof's chain and seq.
struct ForkPoint: Hashable, Sendable {
    var chain: ChainKey
    var seq: UInt64

    init(_ chain: ChainKey, seq: UInt64) { (self.chain, self.seq) = (chain, seq) }
    init(_ proof: ForkProof) { self.init(ChainKey(partition: proof.partition, author: proof.author), seq: proof.seq) }
}

/// A partition both sides list on this link: it is synced (vectors, WANT/OPS, NEW_OP).
struct SharedPartition: Sendable {
    /// What is known of the peer's heads for authors without a `Chain.peerSeq`.
    enum Baseline: Sendable {
        /// Nothing: push nothing until a vector or equal digests tell.
        case unknown
        /// The digests were equal: the peer holds what this node holds.
        case sameAsLocal
        /// A full vector arrived: an author it did not list is one it holds nothing of.
        case explicit
    }

    /// The peer's digest, as last listed.
    var remoteDigest: Bytes32
    var baseline = Baseline.unknown
    /// A vector round in progress (this node asked for its own vector and awaits the peer's).
    var exchange: VectorExchange?
    var chains: [UserID: Chain] = [:]

    init(remoteDigest: Bytes32) { self.remoteDigest = remoteDigest }
}

/// Both vectors of one round: ours (loaded by the shell) and the peer's (paged).
struct VectorExchange: Sendable {
    /// When the round started: a round the peer never answers is dropped at the next
    /// anti-entropy tick after a full interval, so the partition can sync again.
    var startedAt: UInt64
    var local: [Head]?
    var remote: [UserID: Head] = [:]
    var remoteComplete = false
}

/// What this session knows and does about one chain.
struct Chain: Sendable {
    /// The highest seq the peer is known to hold (from vectors, WANTs, ops either way).
    var peerSeq: UInt64?
    /// The highest seq this node is known to hold.
    var localSeq: UInt64?
    /// This node excludes the author from some seq on (a fork proof): never fetch.
    var frozen = false
    /// Fetching failed this round (rejected ops); the next vector round tries again.
    var blocked = false
    /// Waiting in `wantQueue`.
    var queued = false
    /// Where a session stands on fetching one chain: the node lets one session at a time fetch a
    /// chain (`.claimChain`), so a node behind by k ops receives them once, not once per peer.
    enum Claim: Hashable, Sendable {
        /// Not asked for.
        case none
        /// `.claimChain` went out; the answer has not come.
        case asked
        /// This session fetches the chain; it says `.releaseChain` when done.
        case held
        /// Another session fetches it; `onChainReleased` says when it is done.
        case refused
    }

    /// `.apply` directives not yet answered by `onApplied`.
    var applying = 0
    /// Ops fetched (OPS) and handed to `.apply`, whose outcomes have not come back yet.
    var fetchedUnapplied = 0
    /// Whether this session may fetch the chain (one session of the node at a time does).
    var claim = Claim.none
    /// The apply in flight is a NEW_OP's: its outcome tells the node whether the push was new.
    var applyingPush = false
    /// The peer asked for this chain again (RESUME): push the next op even if the peer is not
    /// known to hold the one before (it fetches the gap with a WANT).
    var resumed = false
    /// Pushes of this chain were held back by pacing since the peer last held all of it: each
    /// new op not pushed starts (or extends) a vector round, so the peer fetches it.
    var heldBack = false
    /// What only fetching, probing and the tree use, boxed: a session remembers a chain for
    /// every author it pushes or is pushed, and with a thousand authors on each of its links
    /// the table of all fields inline was most of a node's memory. Nil while all are unset.
    private var fetching: ChainFetching?

    /// A fork probe to send: the peer's op at this seq, to compare with ours.
    var probe: Probe? {
        get { fetching?.fields.probe }
        set { updateFetching { $0.probe = newValue } }
    }
    /// The WANT outstanding; clearing it clears `wantSentAt` too.
    var want: OutstandingWant? {
        get { fetching?.fields.want }
        set {
            updateFetching {
                $0.want = newValue
                if newValue == nil { $0.wantSentAt = 0 }
            }
        }
    }
    /// When the WANT outstanding was sent (a claim held past an anti-entropy interval on one
    /// unanswered WANT is given up, so a stalling peer cannot hold a chain).
    var wantSentAt: UInt64 {
        get { fetching?.fields.wantSentAt ?? 0 }
        set { updateFetching { $0.wantSentAt = newValue } }
    }
    /// Out-of-order NEW_OPs, sorted by seq, at most `maxPendingPerChain`.
    var pending: [Operation] {
        get { fetching?.fields.pending ?? [] }
        set { updateFetching { $0.pending = newValue } }
    }
    /// The broadcast tree: the peer holds ops of this chain that this node lacks (announced, or
    /// a small gap in its vector), and they are fetched from it only from this time on, if the
    /// tree has not brought them by then (`+Tree`).
    var graftAt: UInt64? {
        get { fetching?.fields.graftAt }
        set { updateFetching { $0.graftAt = newValue } }
    }

    /// Writes the boxed fields: a new box (a chain is a value, and its copies share the old
    /// one), or none once nothing in it is set.
    private mutating func updateFetching(_ change: (inout ChainFetching.Fields) -> Void) {
        var fields = fetching?.fields ?? ChainFetching.Fields()
        change(&fields)
        fetching = fields.isUnset ? nil : ChainFetching(fields)
    }

    var isIdle: Bool { want == nil && applying == 0 }

    /// Ops of this chain known to be missing here and not yet fetched: how far the peer's head
    /// is past ours and past what is being applied (0 for a chain that is not fetched now:
    /// frozen, blocked, or never compared).
    var gap: Int {
        guard !frozen, !blocked, let peerSeq, let localSeq else { return 0 }
        let have = localSeq + UInt64(fetchedUnapplied)
        return peerSeq > have ? Int(clamping: peerSeq - have) : 0
    }
    var nextSeq: UInt64 { (localSeq ?? 0) + 1 }

    /// A NEW_OP or OPS entry that tells nothing the baseline does not: safe to forget.
    var isForgettable: Bool {
        isIdle && !queued && pending.isEmpty && probe == nil && !frozen && !blocked && claim == .none && !resumed && !heldBack && graftAt == nil
    }
}

/// The fields of a `Chain` that only fetching, probing and the tree use, in an immutable box.
final class ChainFetching: Sendable {
    struct Fields: Sendable {
        var probe: Probe?
        var want: OutstandingWant?
        var wantSentAt: UInt64 = 0
        var pending: [Operation] = []
        var graftAt: UInt64?

        var isUnset: Bool { probe == nil && want == nil && wantSentAt == 0 && pending.isEmpty && graftAt == nil }
    }

    let fields: Fields

    init(_ fields: Fields) { self.fields = fields }
}

/// A request for the peer's op at one seq, to compare with ours: when it differs, the store
/// finds the fork and makes the proof.
struct Probe: Hashable, Sendable {
    enum Reason: Hashable, Sendable {
        /// The vectors showed different head ids at the same seq.
        case headsDiffer
        /// The peer's next op did not link to our head; a duplicate answer means the peer sent a
        /// broken chain (it counts as an invalid op).
        case brokenChain
    }

    var seq: UInt64
    var reason: Reason
    /// The probe's WANT went out; its `onApplied` judges the answer.
    var sent = false
}

/// A WANT this node sent and the peer is answering.
struct OutstandingWant: Hashable, Sendable {
    let from: UInt64
    let count: Int
    var received = 0
    let isProbe: Bool
}

/// A WANT from the peer, waiting or being served.
struct PeerWant: Hashable, Sendable {
    let key: ChainKey
    let from: UInt64
    let count: Int
}

/// The WANT being served: ops are read from the store in `loadBatch` steps.
struct Serving: Hashable, Sendable {
    let want: PeerWant
    var nextSeq: UInt64
    var remaining: Int
    /// The limit of the `.loadOps` in flight.
    var requested: Int
}

extension GossipSession {
    /// The chain's state, if remembered.
    func chain(_ key: ChainKey) -> Chain? { shared[key.partition]?.chains[key.author] }

    /// Stores a chain's state; a new chain is remembered only under `maxChains`. Every change
    /// of a remembered chain goes through here (or `removeChain`), which keeps `missing` exact.
    ///
    /// It writes through `shared[…]?.chains[…]` in place: copying the partition out and back
    /// would copy its whole chain table on every call (the table is shared with `shared` while
    /// the copy is mutated), which profiles of live push showed.
    mutating func setChain(_ key: ChainKey, _ chain: Chain) {
        guard shared[key.partition] != nil else { return }
        if let old = shared[key.partition]?.chains[key.author] {
            missing -= old.gap
        } else {
            guard chainCount < configuration.maxChains else { return }
            chainCount += 1
        }
        missing += chain.gap
        shared[key.partition]?.chains[key.author] = chain
    }

    /// Forgets a chain (its knowledge is covered by the partition's baseline).
    mutating func removeChain(_ key: ChainKey) {
        guard let old = shared[key.partition]?.chains.removeValue(forKey: key.author) else { return }
        chainCount -= 1
        missing -= old.gap
    }
}

/// A first-in first-out queue with O(1) pops (the fetch queue may hold many chains).
struct Queue<Element: Sendable>: Sendable {
    private var items: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }

    mutating func append(_ item: Element) { items.append(item) }

    mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let item = items[head]
        head += 1
        if head >= 64 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }
}
