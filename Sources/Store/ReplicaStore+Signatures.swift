import Identity
import Replica
import Sodium

/// An author's head in a partition, as the `heads` table keeps it.
struct ChainHead {
    var maxSeq: UInt64
    var headID: OpID
    var frozenAt: UInt64?
    /// The first seq of the chain's link-authenticated tail, if it has one (see `tail`).
    var uncheckedFrom: UInt64?

    static let none = ChainHead(maxSeq: 0, headID: .zero, frozenAt: nil, uncheckedFrom: nil)

    /// The seqs of the ops held only on their author's link's word: their own signatures, and
    /// any later op's, are not checked yet. A stale `uncheckedFrom` (above `maxSeq`, after a
    /// truncation) is no tail.
    var tail: ClosedRange<UInt64>? {
        guard let uncheckedFrom, uncheckedFrom <= maxSeq else { return nil }
        return uncheckedFrom...maxSeq
    }
}

/// What vouches for an op's signature when it reaches `ReplicaStore.applyChecked`.
enum SignatureEvidence: Equatable {
    /// Nothing yet: the op's own signature is checked there, unless its author pushed it over
    /// its own link (`ReplicaStore.mayDeferSignature`).
    case none
    /// The caller verified the op's own signature.
    case checked
    /// A later op of the same run, whose signature the caller verified, chains to this one
    /// (chain-batched verification): the op is authentic, and its own signature is checked
    /// before it leaves the node (`OutboundChecks.sendable`).
    case chain
}

/// An op as far as its signature goes: its id does not cover the signature, so two copies of
/// one op may differ there, and only the copy that was verified counts as checked.
struct SignedOpKey: Hashable {
    let id: OpID
    let signature: SIMD8<UInt64>

    init(_ op: Operation) {
        self.init(id: op.id, header: op.header)
    }

    /// A stored header (`ops.header`, whose layout `Operation` checked before it was stored).
    init(storedHeader header: [UInt8]) {
        self.init(id: Operation.id(ofHeader: header), header: header)
    }

    private init(id: OpID, header: [UInt8]) {
        self.id = id
        signature = Operation.withSignature(ofHeader: header) { signature in
            var words = SIMD8<UInt64>()
            withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: signature) }
            return words
        }
    }
}

/// One op's place: partition row, author row, seq.
struct ChainPosition: Hashable {
    let pid: Int64
    let aid: Int64
    let seq: UInt64
}

extension ReplicaStore {
    // MARK: Ops held on another op's word

    /// The most ops a chain's link-authenticated tail holds: the op that would make it longer
    /// has its signature checked on arrival, which authenticates the tail below it too.
    ///
    /// Why: a NEW_OP pushed by its own author comes over a link whose handshake proved the
    /// author's key, under the link's authenticated encryption, so who wrote it is already
    /// known. Its signature matters to the peers this node passes it on to, and every op is
    /// checked before it leaves the node (`OutboundChecks.sendable`); checking each on arrival
    /// too would cost every node one verification per op its peers write.
    public static let maxLinkAuthenticatedTail: UInt64 = 7

    /// Whether `op`, pushed over `linkAuthor`'s link and extending `head`, may be stored before
    /// its signature is checked.
    static func mayDeferSignature(of op: Operation, linkAuthor: UserID?, head: ChainHead) -> Bool {
        guard let linkAuthor, linkAuthor == op.author, op.seq == head.maxSeq + 1 else { return false }
        return UInt64(head.tail?.count ?? 0) < maxLinkAuthenticatedTail
    }

    /// The first seq of the tail once `op` is the head: checked (`deferred` false), it
    /// authenticates everything below it, so there is no tail.
    static func uncheckedFrom(after op: Operation, deferred: Bool, head: ChainHead) -> UInt64? {
        deferred ? head.tail?.lowerBound ?? op.seq : nil
    }
}
