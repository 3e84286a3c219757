import Identity
import Replica
import Wire

/// One message of the sync protocol inside a link (docs/DESIGN.md §4.3, §4.3.1).
///
/// A message is one link frame: a type byte, then the fields of its type, big-endian, with no
/// slack (trailing bytes are an error). The whole message MUST fit `SyncMessage.maxBytes`
/// (1 MiB, the frame limit of docs/DESIGN.md §4.2); every count and length is checked against its limit
/// before anything is allocated. Layouts, after the type byte:
///
/// | type | name | fields |
/// |---:|---|---|
/// | 0x02 | SUMMARY | `flags u8` (bit0 more) ‖ `count u16` (≤ 4,096) ‖ count × `SummaryEntry` |
/// | 0x03 | VECTOR | `partition [32]` ‖ `flags u8` (bit0 more) ‖ `count u16` (≤ 1,024) ‖ count × head |
/// | 0x04 | WANT | `partition [32]` ‖ `author [32]` ‖ `from seq u64` (≥ 1) ‖ `max count u16` (1…256) |
/// | 0x05 | OPS | `OpBatch`: `partition [32]` ‖ `author [32]` ‖ `flags u8` (bit0 last) ‖ `count u16` (≤ 256) ‖ count × (`length u32` ‖ op) |
/// | 0x06 | NEW_OP | one whole op: `header [216]` ‖ body (the rest of the message); never an erased op |
/// | 0x07 | FORK | `ForkProof.encoded`: two signed headers `[216]` ‖ `[216]` |
/// | 0x08 | PRESENCE | reserved |
/// | 0x0C | TYPING | `TypingMessage` (the shell's, not the session's) |
/// | 0x0D | BLOB_WANT | `BlobMessage` (the shell's `BlobFetcher`, not the session's) |
/// | 0x0E | BLOB | `BlobMessage` |
/// | 0x0F | SKIP | `count u16` (1…1,024) ‖ count × chain (`partition [32]` ‖ `author [32]`) |
/// | 0x10 | RESUME | as SKIP |
/// | 0x13 | ROOMS | `RoomListMessage` (the shell's; sent only when both HELLOs announce `SyncHello.roomDirectory`) |
/// | 0x14 | PRUNE | `count u16` (1…1,024) ‖ count × `partition [32]` |
/// | 0x15 | GRAFT | as PRUNE |
/// | 0x16 | ANNOUNCE | `partition [32]` ‖ `count u16` (1…1,024) ‖ count × (`author [32]` ‖ `seq u64` ≥ 1) |
/// | 0x17 | COMPACT_VECTOR | `partition name` ‖ `flags u8` (bit0 more) ‖ `count varint` (≤ 1,024) ‖ count × compact head |
/// | 0x18 | COMPACT_ANNOUNCE | `partition name` ‖ `count varint` (1…1,024) ‖ count × (`author name` ‖ `seq varint` ≥ 1) |
/// | 0x19 | COMPACT_SKIP | `count varint` (1…1,024) ‖ count × (`partition name` ‖ `author name`) |
/// | 0x1A | COMPACT_RESUME | as COMPACT_SKIP |
///
/// The compact messages say what VECTOR, ANNOUNCE, SKIP and RESUME say, in a quarter of the
/// bytes or less; they are sent only when both HELLOs announce `SyncHello.compactNames`. A *name* (a
/// partition id or an author key) is `varint n`: n = 0 is the name in full, `[32]`, which the
/// receiver numbers 1, 2, 3… in the order they arrive on the link, up to
/// `maxLinkNames`; n ≥ 1 is the name the sender sent in full n-th (a number it never sent
/// closes the link). A compact head is `author name` ‖ `max seq varint` ‖ the first 16 bytes of
/// the head id when max seq > 0 ‖ `frozen at varint` (0 = not frozen, else above max seq).
/// Varints are unsigned LEB128 in their shortest form (`ByteWriter.varint`).
///
/// SKIP and RESUME (push control, after Scuttlebutt's Epidemic Broadcast Trees) are sent only
/// to a peer whose `SyncHello` announced `SyncHello.pushControl`, and only when this node
/// announced it too: a node without the feature would close the link on an unknown type.
/// PRUNE, GRAFT and ANNOUNCE (the broadcast tree, after Plumtree) likewise need
/// `SyncHello.treePush` on both sides.
///
/// The link layer owns HELLO 0x01, PING 0x09, PONG 0x0A, BYE 0x0B and ADDRESSES 0x11
/// (NodeRuntime's `LinkMessage`): there is one HELLO on the wire, the link's, and it carries
/// this protocol's `SyncHello` at its end; keepalive and goodbye are the link's too. A sync
/// message never uses those numbers.
///
/// A head in VECTOR is 80 bytes: `author [32]` ‖ `max seq u64` ‖ `head id [32]` ‖
/// `frozen at u64` (0 = not frozen); max seq is 0 exactly when the head id is zero, and a
/// frozen-at seq is above max seq. An op inside OPS is `Operation.encoded` (header ‖ body), its
/// length between 216 and 216 + 64 KiB, and MUST belong to the batch's partition and author.
/// Since protocol version 2, bit 31 of an op's `length` marks an *erased* op (its author deleted
/// it, and the sender holds no body): `header [216]` ‖ the erasure proof, the author's delete
/// as `header [216]` ‖ body, `length` (bits 0–30) between 432 and 432 + 64 KiB. The receiver
/// checks the proof itself (`Operation.erasureProblem`) and refuses an op it does not prove.
/// Bit 30 marks an *expired* op (outside its room's retention, docs/ARCHITECTURE.md,
/// *Retention*): `header [216]` alone, `length` exactly 216; bits 31 and 30 are never both set.
/// The receiver takes it only if the op is outside the retention by its own view.
/// Flag bits not named here MUST be 0 when sent and are ignored when read.
///
/// Reserved types are for later features (negotiated through `SyncHello.features`): a decoder
/// reports them as `SyncDecodingError.reservedType` so the shell can route or ignore them.
public enum SyncMessage: Hashable, Sendable {
    /// The partitions the sender offers, with their digests; `more` says another page follows.
    case summary(more: Bool, entries: [SummaryEntry])
    /// The sender's heads of one partition, one page; `more` says another page follows.
    case vector(partition: PartitionID, more: Bool, heads: [Head])
    /// A request for one author's ops from `fromSeq` on, at most `maxCount` (the credit).
    case want(partition: PartitionID, author: UserID, fromSeq: UInt64, maxCount: UInt16)
    /// Ops answering a WANT, in chain order.
    case ops(OpBatch)
    /// A live push of one op the sender just wrote or accepted.
    case newOp(Operation)
    /// Proof that an author forked a partition.
    case fork(ForkProof)
    /// "Stop pushing these chains to me": another link delivers them first (push control).
    case skip([ChainKey])
    /// "Push these chains to me again", even ahead of what I hold: the link that delivered them
    /// is gone or behind (push control).
    case resume([ChainKey])
    /// "Stop pushing these partitions to me; announce their ops instead": another link delivers
    /// them first (the broadcast tree: this link leaves the partition's tree, both ways).
    case prune([PartitionID])
    /// "Push these partitions to me again": an announced op did not arrive through the tree in
    /// time (this link joins the partition's tree again, both ways).
    case graft([PartitionID])
    /// "I hold these ops": the newest seq of each chain the sender applied since its last
    /// ANNOUNCE, on a link that does not push them (the tree's lazy links).
    case announce(partition: PartitionID, heads: [AnnouncedHead])
    /// VECTOR with its names by number (`LinkName`), on a link whose sides both speak it.
    case compactVector(partition: LinkName, more: Bool, heads: [CompactHead])
    /// ANNOUNCE with its names by number.
    case compactAnnounce(partition: LinkName, heads: [CompactAnnouncedHead])
    /// SKIP with its names by number.
    case compactSkip([CompactChain])
    /// RESUME with its names by number.
    case compactResume([CompactChain])

    /// The largest message: one frame (docs/DESIGN.md §4.2).
    public static let maxBytes = 1 << 20
    /// Entries in one SUMMARY page.
    public static let maxSummaryEntries = 4_096
    /// Heads in one VECTOR page.
    public static let maxVectorHeads = 1_024
    /// Ops in one OPS message, and the largest credit of a WANT.
    public static let maxOpsPerBatch = 256
    /// The largest `max count` of a WANT.
    public static let maxWantCount = 256
    /// Chains in one SKIP or RESUME.
    public static let maxPushControlChains = 1_024
    /// Partitions in one PRUNE or GRAFT, and heads in one ANNOUNCE.
    public static let maxTreePartitions = 1_024
    public static let maxAnnouncedHeads = 1_024
    /// Names one side numbers on a link (`LinkName`); past them, names go in full. 16,384
    /// names are 512 KiB of keys per link at most, whatever a peer sends.
    public static let maxLinkNames = 16_384
    /// The largest encoded partition descriptor in a summary entry.
    public static let maxDescriptorBytes = 96
    /// The smallest op on the wire (a header and an empty or erased body) and the largest.
    public static let minOpBytes = Operation.headerBytes
    public static let maxOpBytes = Operation.headerBytes + Operation.maxBodyBytes

    /// Bit 31 of an OPS entry's length: the entry is an erased op with its proof.
    static let erasedOpBit: UInt32 = 1 << 31
    /// Bit 30 of an OPS entry's length: the entry is an expired op, its header alone.
    static let expiredOpBit: UInt32 = 1 << 30

    /// Bytes of the fixed parts, for sizing pages.
    static let summaryPrefixBytes = 1 + 1 + 2
    static let summaryEntryFixedBytes = 32 + 32 + 1
    static let vectorPrefixBytes = 1 + 32 + 1 + 2
    static let headBytes = 32 + 8 + 32 + 8
    static let opsPrefixBytes = 1 + 32 + 32 + 1 + 2
    static let opLengthBytes = 4
    static let chainBytes = 32 + 32
    static let announcePrefixBytes = 1 + 32 + 2
    static let announcedHeadBytes = 32 + 8

    /// The type byte of this message.
    public var type: SyncMessageType {
        switch self {
        case .summary: .summary
        case .vector: .vector
        case .want: .want
        case .ops: .ops
        case .newOp: .newOp
        case .fork: .fork
        case .skip: .skip
        case .resume: .resume
        case .prune: .prune
        case .graft: .graft
        case .announce: .announce
        case .compactVector: .compactVector
        case .compactAnnounce: .compactAnnounce
        case .compactSkip: .compactSkip
        case .compactResume: .compactResume
        }
    }
}

/// The type byte of a sync message, including the types reserved for later features.
public enum SyncMessageType: UInt8, Sendable, CaseIterable {
    case summary = 0x02
    case vector = 0x03
    case want = 0x04
    case ops = 0x05
    case newOp = 0x06
    case fork = 0x07
    case presence = 0x08
    case typing = 0x0C
    case blobWant = 0x0D
    case blob = 0x0E
    case skip = 0x0F
    case resume = 0x10
    /// The room directory (`RoomListMessage`). Not 0x11: the link layer owns that number.
    case rooms = 0x13
    case prune = 0x14
    case graft = 0x15
    case announce = 0x16
    case compactVector = 0x17
    case compactAnnounce = 0x18
    case compactSkip = 0x19
    case compactResume = 0x1A

    /// Types this decoder does not read: presence (no codec yet), and typing, blobs and the room
    /// directory, which have codecs of their own (`TypingMessage`, `BlobMessage`,
    /// `RoomListMessage`) and are handled by the shell.
    public var isReserved: Bool {
        switch self {
        case .presence, .typing, .blobWant, .blob, .rooms: true
        default: false
        }
    }
}

/// One author's log in one partition (`partition [32]` ‖ `author [32]` on the wire): the unit of
/// fetching, pushing and fork handling.
public struct ChainKey: Hashable, Sendable, Comparable {
    public var partition: PartitionID
    public var author: UserID

    public init(partition: PartitionID, author: UserID) { (self.partition, self.author) = (partition, author) }

    public static func < (lhs: ChainKey, rhs: ChainKey) -> Bool {
        (lhs.partition, lhs.author) < (rhs.partition, rhs.author)
    }
}

/// One entry of ANNOUNCE: the sender holds `author`'s chain up to `seq` (`author [32]` ‖ `seq u64`).
public struct AnnouncedHead: Hashable, Sendable {
    public var author: UserID
    public var seq: UInt64

    public init(author: UserID, seq: UInt64) { (self.author, self.seq) = (author, seq) }
}

/// A partition id or an author key in COMPACT_VECTOR and COMPACT_ANNOUNCE: in full the first
/// time the sender names it on the link, by the number the receiver then gave it from there on
/// (`LinkNames`). A key is 32 bytes; a number, one or two.
public enum LinkName: Hashable, Sendable {
    case full(Bytes32)
    /// 1 for the first name sent in full, 2 for the second, and so on.
    case number(UInt32)
}

/// One head of COMPACT_VECTOR: a `Head` with its author named, and only the first 16 bytes of
/// its head id (the rest are zero here). Two heads at one seq are told apart by those 16 bytes:
/// making two ops whose ids share them takes about 2^64 tries.
public struct CompactHead: Hashable, Sendable {
    public var author: LinkName
    public var maxSeq: UInt64
    public var headID: OpID
    public var frozenAt: UInt64?

    public init(author: LinkName, maxSeq: UInt64, headID: OpID, frozenAt: UInt64?) {
        (self.author, self.maxSeq, self.frozenAt) = (author, maxSeq, frozenAt)
        self.headID = OpID(Bytes32(w0: headID.raw.w0, w1: headID.raw.w1, w2: 0, w3: 0))
    }
}

/// One entry of COMPACT_ANNOUNCE: `AnnouncedHead` with its author named.
public struct CompactAnnouncedHead: Hashable, Sendable {
    public var author: LinkName
    public var seq: UInt64

    public init(author: LinkName, seq: UInt64) { (self.author, self.seq) = (author, seq) }
}

/// One chain of COMPACT_SKIP or COMPACT_RESUME: `ChainKey` with its names by number.
public struct CompactChain: Hashable, Sendable {
    public var partition: LinkName
    public var author: LinkName

    public init(partition: LinkName, author: LinkName) { (self.partition, self.author) = (partition, author) }
}

extension Head {
    /// Whether two heads name the same op, by the first 16 bytes of their ids (what a
    /// COMPACT_VECTOR carries; `CompactHead`).
    public func sameOp(as other: Head) -> Bool {
        headID.raw.w0 == other.headID.raw.w0 && headID.raw.w1 == other.headID.raw.w1
    }
}

/// One partition in a SUMMARY: `partition id [32]` ‖ `digest [32]` ‖ `descriptor length u8`
/// (0…96) ‖ descriptor.
///
/// With a descriptor, the receiver MUST check that it hashes to the id (a mismatch is a
/// malformed message) and may learn the partition. Without one (length 0) the entry only says
/// "I hold this id": a receiver that does not hold it learns nothing, which keeps room names
/// from peers that did not join them (`Sharing.ifPeerHolds`).
public struct SummaryEntry: Hashable, Sendable {
    public var partition: PartitionID
    /// `PartitionDigest.raw` of the sender's replica.
    public var digest: Bytes32
    public var descriptor: PartitionDescriptor?

    public init(partition: PartitionID, digest: Bytes32, descriptor: PartitionDescriptor?) {
        precondition(descriptor.map { $0.id == partition } ?? true, "a descriptor must hash to its partition id")
        (self.partition, self.digest, self.descriptor) = (partition, digest, descriptor)
    }

    /// An entry for `descriptor`, revealing the descriptor or only its id.
    public init(_ descriptor: PartitionDescriptor, digest: PartitionDigest, revealDescriptor: Bool) {
        self.init(partition: descriptor.id, digest: digest.raw, descriptor: revealDescriptor ? descriptor : nil)
    }
}

/// Ops of one chain (partition, author) in one OPS message, in increasing seq order.
///
/// The answer to a WANT is one or more batches; the last one has `isLast` set (it may be empty),
/// which tells the requester the sender holds no more of the asked range.
public struct OpBatch: Hashable, Sendable {
    public var partition: PartitionID
    public var author: UserID
    public var ops: [Operation]
    public var isLast: Bool

    public init(partition: PartitionID, author: UserID, ops: [Operation], isLast: Bool) {
        (self.partition, self.author, self.ops, self.isLast) = (partition, author, ops, isLast)
    }

    /// Bytes of this batch as an OPS message.
    public var encodedSize: Int {
        ops.reduce(SyncMessage.opsPrefixBytes) { $0 + SyncMessage.opLengthBytes + $1.carriedByteCount }
    }
}
