import Identity
import Replica
import SQLite

/// What an op needs before it leaves the node (docs/ARCHITECTURE.md, *Every op that leaves a
/// node has a checked signature*): its own signature verified, once, and a bad one repaired.
///
/// The state it reads and marks is the op log's (`ops.signature_checked`, `refused_signatures`
/// and the signatures this process verified, `OpLog+Signatures.swift`); removing a bad op with
/// the chain after it is a cut that `Forks` settles in the views. Not thread-safe: its store's
/// one owner uses it.
public final class OutboundChecks {
    let database: Database
    let log: OpLog
    let views: Views
    let forks: Forks
    /// Opened with `ReplicaStore.init(readOnlyPath:)`: a bad signature is withheld, not repaired.
    let isReadOnly: Bool

    init(database: Database, log: OpLog, views: Views, forks: Forks, isReadOnly: Bool) {
        (self.database, self.log, self.views, self.forks, self.isReadOnly) = (database, log, views, forks, isReadOnly)
    }

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
        try forks.discardChain(record: record, aid: aid, from: seq)
        try log.refuseSignature(at: ChainPosition(pid: record.pid, aid: aid, seq: seq), nowMillis: nowMillis)
    }
}
