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
        let id = header.withUnsafeBytes { OpID(bytes: GenericHash.hash(UnsafeRawBufferPointer(rebasing: $0[0..<Operation.signedBytes])))! }
        self.init(id: id, header: header)
    }

    private init(id: OpID, header: [UInt8]) {
        self.id = id
        signature = header.withUnsafeBytes { header in
            var words = SIMD8<UInt64>()
            withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: header[Operation.signedBytes..<Operation.headerBytes])) }
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

    /// Positions refused for a bad signature that are remembered (the oldest are forgotten
    /// beyond it): each holds one row and one set entry, and only an op whose chain was proven
    /// by a later signature and whose own signature failed adds one.
    static let maxRefusedSignatures = 4_096

    /// Op ids whose signatures this process verified, kept up to this many (then started
    /// afresh): an op pushed to several peers right after it was stored is not read back for
    /// each of them.
    static let maxRememberedSignatures = 16_384

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

    func noteSignatureChecked(_ op: Operation) {
        if checkedSignatures.count >= Self.maxRememberedSignatures { checkedSignatures.removeAll(keepingCapacity: true) }
        checkedSignatures.insert(SignedOpKey(op))
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
        let ops = try erasedForms(of: ops)
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
        guard let first = run.first, let last = run.last, run.contains(where: { !checkedSignatures.contains(SignedOpKey($0)) }) else { return nil }
        let stored = try storedChecks(of: first, through: last.seq)
        let unchecked = run.indices.filter { index in
            !checkedSignatures.contains(SignedOpKey(run[index]))
                && stored.checks[run[index].seq].map { $0.key != SignedOpKey(run[index]) || !$0.checked } ?? true
        }
        let valid = Operation.signaturesAreValid(unchecked.map { run[$0] })
        let firstBad = zip(unchecked, valid).first { !$0.1 }?.0
        let good = run[run.startIndex..<(firstBad ?? run.endIndex)]
        for op in good { noteSignatureChecked(op) }
        // A read-only store (a web page's export) withholds a bad op without repairing.
        guard let record = stored.record, let aid = stored.aid, !isReadOnly else { return firstBad.map { ($0, false) } }
        var removed = false
        try database.transaction(.immediate) {
            if let lastGood = good.last {
                // Only a stored copy that is the op verified here (signature bytes and all) is marked.
                let matching = good.filter { stored.checks[$0.seq]?.key == SignedOpKey($0) }
                if matching.count == good.count {
                    try database.cachedStatement(
                        "UPDATE ops SET signature_checked = 1 WHERE pid = ? AND aid = ? AND seq BETWEEN ? AND ? AND signature_checked = 0"
                    ).run(.integer(record.pid), .integer(aid), .integer(Int64(first.seq)), .integer(Int64(lastGood.seq)))
                } else {
                    for op in matching {
                        try database.cachedStatement("UPDATE ops SET signature_checked = 1 WHERE pid = ? AND aid = ? AND seq = ?")
                            .run(.integer(record.pid), .integer(aid), .integer(Int64(op.seq)))
                    }
                }
                // A good signature in the link-authenticated tail authenticates the tail below it.
                let head = try head(pid: record.pid, aid: aid)
                if let tail = head.tail, tail.contains(lastGood.seq) {
                    try setUncheckedFrom(lastGood.seq < head.maxSeq ? lastGood.seq + 1 : nil, pid: record.pid, aid: aid)
                }
            }
            if let firstBad, stored.checks[run[firstBad].seq]?.key == SignedOpKey(run[firstBad]) {
                try discardUnverifiable(record: record, aid: aid, from: run[firstBad].seq, nowMillis: nowMillis)
                try flushPendingRebuilds()
                removed = true
            }
        }
        return firstBad.map { ($0, removed) }
    }

    /// The stored ops (as far as their signatures go) and whether their signatures were checked, from `first` through
    /// `lastSeq` of its chain, with the chain's row ids (nil when the store does not hold it).
    private func storedChecks(
        of first: Operation, through lastSeq: UInt64
    ) throws -> (record: PartitionRecord?, aid: Int64?, checks: [UInt64: (key: SignedOpKey, checked: Bool)]) {
        guard let record = try partition(first.partition), let aid = try existingAuthorID(first.author) else { return (nil, nil, [:]) }
        var checks: [UInt64: (key: SignedOpKey, checked: Bool)] = [:]
        try database.cachedStatement("SELECT seq, header, signature_checked FROM ops WHERE pid = ? AND aid = ? AND seq BETWEEN ? AND ?")
            .forEachRow([.integer(record.pid), .integer(aid), .integer(Int64(first.seq)), .integer(Int64(lastSeq))]) { row in
                checks[UInt64(row.int64(0))] = (SignedOpKey(storedHeader: row.blob(1)), row.int(2) != 0)
            }
        return (record, aid, checks)
    }

    /// Whether the stored op at `seq` is held on another op's word and its own signature is
    /// bad: then it is removed with the chain after it, and the caller may treat the position
    /// as free (a conflicting op with a good signature is then no fork).
    func discardIfUnverifiable(_ stored: StoredOp, seq: UInt64, record: PartitionRecord, aid: Int64, nowMillis: UInt64) throws -> Bool {
        guard !stored.signatureChecked, try !stored.operation().hasValidSignature else { return false }
        try discardUnverifiable(record: record, aid: aid, from: seq, nowMillis: nowMillis)
        return true
    }

    /// Removes an author's ops from `seq` on (`seq` failed its signature check) and remembers
    /// the position.
    private func discardUnverifiable(record: PartitionRecord, aid: Int64, from seq: UInt64, nowMillis: UInt64) throws {
        try discardChain(record: record, aid: aid, from: seq)
        let position = ChainPosition(pid: record.pid, aid: aid, seq: seq)
        try database.cachedStatement("INSERT OR REPLACE INTO refused_signatures(pid, aid, seq, refused_at) VALUES (?, ?, ?, ?)")
            .run(.integer(position.pid), .integer(position.aid), .integer(Int64(position.seq)), .integer(Int64(nowMillis)))
        try database.execute(
            """
            DELETE FROM refused_signatures WHERE (pid, aid, seq) IN
                (SELECT pid, aid, seq FROM refused_signatures ORDER BY refused_at DESC LIMIT -1 OFFSET ?)
            """, .integer(Int64(Self.maxRefusedSignatures)))
        refusedSignaturesCache = nil
    }

    // MARK: Refused positions

    /// Whether an op at `position` was removed for a bad signature and no good one took its place.
    func isRefusedSignature(_ position: ChainPosition) throws -> Bool {
        if let refused = refusedSignaturesCache { return refused.contains(position) }
        let refused = Set(
            try database.cachedStatement("SELECT pid, aid, seq FROM refused_signatures").rows { row in
                ChainPosition(pid: row.int64(0), aid: row.int64(1), seq: UInt64(row.int64(2)))
            })
        refusedSignaturesCache = refused
        return refused.contains(position)
    }

    func forgetRefusedSignature(_ position: ChainPosition) throws {
        try database.cachedStatement("DELETE FROM refused_signatures WHERE pid = ? AND aid = ? AND seq = ?")
            .run(.integer(position.pid), .integer(position.aid), .integer(Int64(position.seq)))
        refusedSignaturesCache?.remove(position)
    }

    /// How many ops this store removed for signatures that do not verify, whose places no good
    /// op has taken yet (`parley doctor`).
    public func refusedSignatureCount() throws -> Int {
        try database.scalar("SELECT count(*) FROM refused_signatures") ?? 0
    }

    private func setUncheckedFrom(_ seq: UInt64?, pid: Int64, aid: Int64) throws {
        try database.cachedStatement("UPDATE heads SET unchecked_from = ? WHERE pid = ? AND aid = ?")
            .run(seq.map { .integer(Int64($0)) } ?? .null, .integer(pid), .integer(aid))
    }
}
