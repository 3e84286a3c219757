import Identity
import Replica

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

extension ReplicaStore {
    // MARK: Link-authenticated ops

    private struct Chain: Hashable {
        let partition: PartitionID
        let author: UserID
    }

    /// The most ops a chain's link-authenticated tail holds: the op that would make it longer
    /// has its signature checked on arrival, which authenticates the tail below it too.
    ///
    /// Why: a NEW_OP pushed by its own author comes over a link whose handshake proved the
    /// author's key, under the link's authenticated encryption, so who wrote it is already
    /// known. Its signature matters to the peers this node passes it on to, and they check it.
    /// Checking it on arrival was a quarter of a node's CPU in the 10-node latency benchmark;
    /// checking one in this many, and every op before it leaves the node (`sendable`), keeps
    /// the same guarantees for them.
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

    /// The leading ops of `ops` (one message's, in order) that may leave this node. An op of a
    /// link-authenticated tail has its own signature checked first; a good one authenticates
    /// the tail below it. A bad one means its author signed garbage over its own link: that op
    /// and the chain after it are removed (the views are rebuilt), so peers fetch good ones,
    /// and it is reported in `discarded`. Ops by `me` are never held this way.
    public func sendable(_ ops: [Operation], me: UserID) throws -> (ops: [Operation], discarded: Operation?) {
        guard ops.contains(where: { $0.author != me }) else { return (ops, nil) }
        // One head read per chain (a WANT's answer is one chain), and a write only for a tail.
        var heads: [Chain: (record: PartitionRecord, aid: Int64, head: ChainHead)?] = [:]
        func head(of op: Operation) throws -> (record: PartitionRecord, aid: Int64, head: ChainHead)? {
            let key = Chain(partition: op.partition, author: op.author)
            if let known = heads[key] { return known }
            let found = try partition(op.partition).flatMap { record in try existingAuthorID(op.author).map { (record, $0) } }
            let entry = try found.map { (record: $0.0, aid: $0.1, head: try self.head(pid: $0.0.pid, aid: $0.1)) }
            heads[key] = entry
            return entry
        }
        for (index, op) in ops.enumerated() where op.author != me {
            guard let (record, aid, chain) = try head(of: op), let tail = chain.tail, tail.contains(op.seq) else { continue }
            if op.hasValidSignature {
                var checked = chain
                checked.uncheckedFrom = op.seq < chain.maxSeq ? op.seq + 1 : nil
                try setUncheckedFrom(checked.uncheckedFrom, pid: record.pid, aid: aid)
                heads[Chain(partition: op.partition, author: op.author)] = (record, aid, checked)
                continue
            }
            try database.transaction(.immediate) {
                try discardLinkAuthenticated(record: record, aid: aid, from: op.seq)
                try flushPendingRebuilds()
            }
            return (Array(ops[..<index]), op)
        }
        return (ops, nil)
    }

    /// Whether the stored op at `seq` is held only on its author's link's word and its own
    /// signature is bad: then it is removed with the chain after it, and the caller may treat
    /// the position as free.
    func discardIfUnverifiable(_ stored: StoredOp, seq: UInt64, head: ChainHead, record: PartitionRecord, aid: Int64) throws -> Bool {
        guard let tail = head.tail, tail.contains(seq), try !stored.operation().hasValidSignature else {
            return false
        }
        try discardLinkAuthenticated(record: record, aid: aid, from: seq)
        return true
    }

    private func setUncheckedFrom(_ seq: UInt64?, pid: Int64, aid: Int64) throws {
        try database.cachedStatement("UPDATE heads SET unchecked_from = ? WHERE pid = ? AND aid = ?")
            .run(seq.map { .integer(Int64($0)) } ?? .null, .integer(pid), .integer(aid))
    }
}
