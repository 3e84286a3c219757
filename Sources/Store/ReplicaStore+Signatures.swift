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
    /// before it leaves the node (`ReplicaStore.sendable`).
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
    /// checked before it leaves the node (`sendable`); checking each on arrival too would cost
    /// every node one verification per op its peers write.
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

    // MARK: Before an op leaves

    /// The leading ops of `ops` (one message's: a NEW_OP, or a run of one chain answering a
    /// WANT, or an export's chain) that may leave this node: each has a signature this node has
    /// verified. An op held on another op's word (chain-batched verification, its author's
    /// link, or stored by an older version) has its own signature verified now, once. A bad one
    /// is removed from the store with the chain after it, without freezing the chain (good ops
    /// may take those places, fetched again from peers; its place is remembered so the same bad
    /// copy is not taken again on a chain's word), and is reported in `discarded`. One the store
    /// no longer holds, or a read-only store's, is only withheld.
    ///
    /// Why every op, and not only a run's last: a receiver that gets an op alone (a NEW_OP
    /// passed on) or at the end of a batch checks its own signature, and would refuse one that
    /// fails as the sender's violation. Verifying here costs one check per op that leaves a
    /// node other than by its author, once; verifying every op on arrival would cost it for
    /// every op stored, which is what chain-batched verification saves (docs/ARCHITECTURE.md,
    /// *Every op that leaves a node has a checked signature*).
    ///
    /// An op whose body this store erased since it was read leaves in its erased form, with
    /// its proof (`erasedForms`).
    public func sendable(_ ops: [Operation], nowMillis: UInt64) throws -> (ops: [Operation], discarded: Operation?) {
        let ops = try log.erasedForms(of: ops)
        var start = 0
        while start < ops.count {
            var end = start + 1
            while end < ops.count, ops[end].partition == ops[start].partition, ops[end].author == ops[start].author,
                ops[end].seq == ops[end - 1].seq + 1
            { end += 1 }
            if let bad = try checkSignatures(ops[start..<end], nowMillis: nowMillis) {
                return (Array(ops[..<bad.index]), bad.removed ? ops[bad.index] : nil)
            }
            start = end
        }
        return (ops, nil)
    }

    /// Verifies the signatures of the ops of `run` (one chain, consecutive seqs) not known to be
    /// good, and marks the good ones checked. Returns the index of the first bad one, and
    /// whether this call removed it from the store with the chain after it (it may be gone
    /// already, or the store read-only); nil when all are good.
    private func checkSignatures(_ run: ArraySlice<Operation>, nowMillis: UInt64) throws -> (index: Int, removed: Bool)? {
        guard let first = run.first, let last = run.last, run.contains(where: { !log.hasCheckedSignature($0) }) else { return nil }
        let stored = try log.storedChecks(of: first, through: last.seq)
        let unchecked = run.indices.filter { index in
            !log.hasCheckedSignature(run[index])
                && stored.checks[run[index].seq].map { $0.key != SignedOpKey(run[index]) || !$0.checked } ?? true
        }
        let valid = Operation.signaturesAreValid(unchecked.map { run[$0] })
        let firstBad = zip(unchecked, valid).first { !$0.1 }?.0
        let good = run[run.startIndex..<(firstBad ?? run.endIndex)]
        for op in good { log.noteSignatureChecked(op) }
        // A read-only store (a web page's export) withholds a bad op without repairing.
        guard let record = stored.record, let aid = stored.aid, !isReadOnly else { return firstBad.map { ($0, false) } }
        var removed = false
        try database.transaction(.immediate) {
            try log.markSignaturesChecked(good, from: first.seq, stored: stored.checks, pid: record.pid, aid: aid)
            if let firstBad, stored.checks[run[firstBad].seq]?.key == SignedOpKey(run[firstBad]) {
                try discardUnverifiable(record: record, aid: aid, from: run[firstBad].seq, nowMillis: nowMillis)
                try views.flushPendingRebuilds()
                removed = true
            }
        }
        return firstBad.map { ($0, removed) }
    }

    /// Whether the stored op at `seq` is held on another op's word and its own signature is
    /// bad: then it is removed with the chain after it, and the caller may treat the position
    /// as free (a conflicting op with a good signature is then no fork).
    func discardIfUnverifiable(_ stored: OpLog.StoredOp, seq: UInt64, record: PartitionRecord, aid: Int64, nowMillis: UInt64) throws -> Bool {
        guard !stored.signatureChecked, try !stored.operation().hasValidSignature else { return false }
        try discardUnverifiable(record: record, aid: aid, from: seq, nowMillis: nowMillis)
        return true
    }

    /// Removes an author's ops from `seq` on (`seq` failed its signature check) and remembers
    /// the position.
    private func discardUnverifiable(record: PartitionRecord, aid: Int64, from seq: UInt64, nowMillis: UInt64) throws {
        try discardChain(record: record, aid: aid, from: seq)
        try log.refuseSignature(at: ChainPosition(pid: record.pid, aid: aid, seq: seq), nowMillis: nowMillis)
    }
}
