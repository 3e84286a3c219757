import Replica

/// Limits and timings of a `GossipSession`. The defaults follow docs/DESIGN.md §4.3 and §7; tests shrink
/// them.
public struct GossipConfiguration: Hashable, Sendable {
    /// The protocol version this build speaks, and the oldest it links with. 2: OPS carries
    /// erased ops with their proofs (`SyncMessage`), and a delete body may name edits to erase
    /// (`OperationBody.delete`); a version 1 node would refuse both as malformed. 3: rooms hold
    /// policy ops (0x14) and OPS carries expired ops as headers alone (bit 30); a version 2 node
    /// would count both as invalid and close the link, so a version 3 node does not link with it.
    public static let protocolVersion: UInt16 = 3
    /// The smallest frame a peer may announce: one OPS message must hold one largest op.
    public static let minimumFrameBytes = SyncMessage.opsPrefixBytes + SyncMessage.opLengthBytes + SyncMessage.maxOpBytes

    /// The largest frame this node accepts (announced in the link's HELLO, `hello`).
    public var maxFrameBytes = SyncMessage.maxBytes
    /// Ops asked for in one WANT (the credit), 1…256.
    public var wantCredit = SyncMessage.maxWantCount
    /// Chains with a WANT outstanding at once; others wait their turn.
    public var maxOutstandingWants = 16
    /// WANTs from the peer waiting to be served; one more closes the link.
    public var maxQueuedPeerWants = 64
    /// Ops read from the store per `.loadOps` (bounds memory: at most this many bodies of 64 KiB).
    public var loadBatch = 64
    /// Out-of-order NEW_OPs kept per (partition, author); later ones are dropped and fetched by WANT.
    public var maxPendingPerChain = 64
    /// Ops from the peer that may fail validation before the link is closed.
    public var maxInvalidOps = 8
    /// Chains (partition, author) remembered per link, for fetching and for live push.
    public var maxChains = 65_536
    /// Partitions the peer listed that this node does not (yet) share, remembered per link.
    public var maxPeerPartitions = 16_384
    /// Milliseconds between anti-entropy rounds (re-sent summaries of changed partitions).
    /// Keepalive and the idle timeout are the link's (docs/DESIGN.md §4.2), not the session's.
    public var antiEntropyInterval: UInt64 = 30_000
    /// A link re-sends its changed summaries every `antiEntropyStride`-th interval, in a round
    /// picked by when it came up, so among many links a node runs each round with a few of them
    /// (`onOverlay(activeSize:)`); the interval's upkeep (stale rounds and claims) runs every
    /// interval. 1: every link every interval, as a full mesh does.
    public var antiEntropyStride = 1
    /// The links a node on the overlay runs each anti-entropy round with, on average: what a
    /// round costs then stays the same however many links the node keeps. With all of them, the
    /// summaries and vectors of the rounds were half the wire bytes per op of a 20-node lab with
    /// 8 active peers.
    public static let antiEntropyFanout = 2
    /// Push control (EBT-style SKIP/RESUME): ask a peer to stop pushing a chain another link
    /// delivers first, and honour such asks. Announced in `hello`; used on a link only when both
    /// sides announce it.
    public var pushControl = true
    /// Chains a peer asked this session to skip, remembered per link (the oldest is forgotten
    /// beyond it: pushes of that chain resume, and the peer asks again). Also the most SKIPs this
    /// session keeps outstanding with the peer (beyond it, duplicates are tolerated).
    public var maxSkippedChains = 16_384
    /// The broadcast tree (after Plumtree's eager and lazy push): a link that delivers a
    /// partition's op already held leaves that partition's tree (PRUNE) and announces ops
    /// instead of pushing them; an announced op that the tree did not bring in time is fetched
    /// through the announcer, whose link rejoins the tree (GRAFT). Announced in `hello`; used on
    /// a link only when both sides announce it, and then in place of SKIP and RESUME. Off by
    /// default (`parley run --push-tree` with `--active-peers`): the tree that forms is not
    /// shallow, so it trades hops for copies (docs/DESIGN.md §4.3.3).
    public var treePush = false
    /// Names by number: VECTOR, ANNOUNCE, SKIP and RESUME go as their compact messages, which
    /// name partitions and authors by a number after their first mention on the link (a head
    /// in about 20 bytes instead of 80, a chain in 2–4 instead of 64; `LinkNames`). Announced in `hello`; used on a link only
    /// when both sides announce it. Off only to test the plain messages.
    public var compactNames = true
    /// How long a lazy link gathers announcements before it sends them (one ANNOUNCE per
    /// partition then holds each chain's newest seq).
    public var announceDelay: UInt64 = 50
    /// How long an announced op may take to arrive through the tree before it is fetched from
    /// the announcer (and the link grafted): a few hops' latency on a LAN.
    public var graftTimeout: UInt64 = 100
    /// NEW_OPs one author's chain may arrive at on one link: more is a flood (a violation). The
    /// sending side paces itself at `pushPacing` of it and leaves the rest to WANTs, which the
    /// receiver asks for at its own pace. Peers are expected to use the same limit.
    public var authorPushRate = OpRate(perSecond: 1_000, burst: 10_000)
    /// The share of `authorPushRate` an honest sender pushes at most, per author and link.
    public var pushPacing = OpRate.Share(percent: 80)
    /// Authors whose push rates are tracked per link (each way); beyond it the least useful
    /// entries are forgotten (`AuthorRates`).
    public var maxRateTrackedAuthors = 4_096
    /// Store and forward: offer conversations and inboxes to every peer and carry those offered
    /// (`SyncPolicy.carriesForOthers`). Not part of a session's behaviour; the shell's policy reads it.
    public var carriesForOthers = true
    /// The room directory: list the public rooms this node joined to its peers (ROOMS), and
    /// keep theirs. Off (`parley run --unlisted`), the node still keeps what peers list but
    /// lists nothing itself. Not part of a session's behaviour; the shell reads it.
    public var listsRooms = true

    public init() {}

    /// What this node announces in the sync fields of its link HELLO.
    public var hello: SyncHello {
        SyncHello(
            protocolVersion: Self.protocolVersion, maxFrame: UInt32(maxFrameBytes),
            features: (pushControl ? SyncHello.pushControl : 0) | SyncHello.roomDirectory | (treePush ? SyncHello.treePush : 0)
                | (compactNames ? SyncHello.compactNames : 0))
    }

    func validate() {
        precondition(maxFrameBytes >= Self.minimumFrameBytes && maxFrameBytes <= SyncMessage.maxBytes, "frame size out of range")
        precondition((1...SyncMessage.maxWantCount).contains(wantCredit), "WANT credit must be 1...\(SyncMessage.maxWantCount)")
        precondition(maxOutstandingWants >= 1 && maxQueuedPeerWants >= 1 && loadBatch >= 1, "limits must be positive")
        precondition(antiEntropyInterval > 0 && antiEntropyStride >= 1, "the anti-entropy interval and stride must be positive")
        precondition(authorPushRate.perSecond >= 1 && authorPushRate.burst >= 1, "the author push rate must be positive")
        precondition(maxSkippedChains >= 1 && maxRateTrackedAuthors >= 1, "limits must be positive")
        precondition(announceDelay > 0 && graftTimeout > 0, "tree push timings must be positive")
    }

    /// A link's configuration on a node that keeps `activeSize` links of the bounded-degree
    /// overlay (nil: a full mesh): anti-entropy with `antiEntropyFanout` of the links each
    /// interval, and the broadcast tree if `treePush` asks for it (a full mesh pushes per chain).
    public func onOverlay(activeSize: Int?) -> GossipConfiguration {
        var link = self
        guard let activeSize else {
            link.treePush = false
            return link
        }
        link.antiEntropyStride = max(1, activeSize / Self.antiEntropyFanout)
        return link
    }
}

/// The sync protocol's part of a link HELLO: what each side tells the other before any sync
/// message. The link layer carries it (one HELLO on the wire); the node passes the peer's to
/// `GossipSession.start`.
///
/// | len | field |
/// |---:|---|
/// | 2 | protocol version (≥ 1) |
/// | 4 | the largest frame the sender accepts |
/// | 4 | feature bits: bit0 push control (SKIP, RESUME), bit1 room directory (ROOMS), bit2 broadcast tree (PRUNE, GRAFT, ANNOUNCE), bit3 names by number (COMPACT_VECTOR, COMPACT_ANNOUNCE, COMPACT_SKIP, COMPACT_RESUME); others 0, ignored when read |
public struct SyncHello: Hashable, Sendable {
    /// Bytes of the fields on the wire.
    public static let encodedBytes = 10
    /// Feature bit: the sender speaks SKIP and RESUME (`SyncMessage.skip`, `.resume`).
    public static let pushControl: UInt32 = 1 << 0
    /// Feature bit: the sender reads ROOMS (`RoomListMessage`).
    public static let roomDirectory: UInt32 = 1 << 1
    /// Feature bit: the sender speaks PRUNE, GRAFT and ANNOUNCE (`SyncMessage.prune`, `.graft`,
    /// `.announce`).
    public static let treePush: UInt32 = 1 << 2
    /// Feature bit: the sender reads the compact messages (`SyncMessage.compactVector`,
    /// `.compactAnnounce`, `.compactSkip`, `.compactResume`), and sends them to a peer that reads
    /// them too.
    public static let compactNames: UInt32 = 1 << 3

    public var protocolVersion: UInt16
    public var maxFrame: UInt32
    public var features: UInt32

    public init(protocolVersion: UInt16, maxFrame: UInt32, features: UInt32) {
        (self.protocolVersion, self.maxFrame, self.features) = (protocolVersion, maxFrame, features)
    }
}

/// One partition as this node offers it to one peer: the shell computes these (with
/// `SyncPolicy.sharing`) for `start` and `onLocalSummaries`.
public struct PartitionSummary: Hashable, Sendable {
    public var descriptor: PartitionDescriptor
    public var digest: PartitionDigest
    public var sharing: Sharing

    public init(descriptor: PartitionDescriptor, digest: PartitionDigest, sharing: Sharing) {
        (self.descriptor, self.digest, self.sharing) = (descriptor, digest, sharing)
    }

    public var id: PartitionID { descriptor.id }
}

/// Whether and how a partition is offered to a peer.
public enum Sharing: Hashable, Sendable {
    /// Listed with its descriptor: the peer may learn it and carry it (the directory, a
    /// conversation to its members, `self` to its owner's nodes, an inbox to its owner).
    case offer
    /// Listed by id only, and synced only if the peer lists it too: it already holds it
    /// (rooms: joining is a local decision; inboxes to carriers).
    case ifPeerHolds
    /// Never listed, never served: a WANT for it closes the link.
    case never
}
