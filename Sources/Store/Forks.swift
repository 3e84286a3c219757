import Identity
import Replica
import SQLite

/// Forks (docs/DESIGN.md §3.3): an author who signed two different ops at one seq loses its ops in the
/// partition from that seq on, on every replica; and cutting a chain short without freezing it
/// (an op whose own signature turned out bad, with what follows it).
///
/// Owns no rows or caches of its own: it keeps proofs and truncates chains through the op log
/// (`fork_proofs`, `heads`), then settles what the removed ops fed — a conversation's
/// membership (members whose membership came only through them lose their ops too), the
/// views, the carried bytes. Not thread-safe: its store's one owner uses it.
public final class Forks {
    let database: Database
    let log: OpLog
    let views: Views
    let carrier: Carrier

    init(database: Database, log: OpLog, views: Views, carrier: Carrier) {
        (self.database, self.log, self.views, self.carrier) = (database, log, views, carrier)
    }

    /// Stores a fork proof and excludes the author's ops from the fork point on. In a
    /// conversation, authors whose membership came only through excluded ops lose their ops too,
    /// so every replica ends with the same set whatever it had received.
    func recordFork(_ proof: ForkProof, record: PartitionRecord, aid: Int64) throws {
        let pid = record.pid
        let current = try log.head(pid: pid, aid: aid)
        if let frozen = current.frozenAt, frozen <= proof.seq { return }
        try log.insertForkProof(proof, pid: pid, aid: aid)
        try log.truncate(pid: pid, aid: aid, from: proof.seq, frozen: true)
        try settleAfterTruncation(record)
    }

    /// Removes an author's ops from `seq` on without freezing the chain (good ops may take the
    /// places again): an op held on another op's word whose signature turned out bad, and what
    /// follows it.
    func discardChain(record: PartitionRecord, aid: Int64, from seq: UInt64) throws {
        try log.truncate(pid: record.pid, aid: aid, from: seq, frozen: false)
        try settleAfterTruncation(record)
    }

    /// After ops were removed: in a conversation, members whose membership came only through
    /// removed ops lose their ops too, to a fixed point; then the views are rebuilt.
    private func settleAfterTruncation(_ record: PartitionRecord) throws {
        let pid = record.pid
        if record.descriptor.kind == .conversation {
            try database.execute(
                "DELETE FROM membership_events WHERE pid = ? AND oid NOT IN (SELECT oid FROM ops WHERE pid = ?)", .integer(pid), .integer(pid))
            while true {
                try views.resolveMembership(record, rebuilding: true)
                let outsiders = try database.prepare(
                    """
                    SELECT DISTINCT h.aid FROM heads h JOIN authors a ON a.aid = h.aid
                    WHERE h.pid = ? AND h.max_seq > 0 AND a.key NOT IN (SELECT user FROM members WHERE pid = ?)
                    """
                ).rows(.integer(pid), .integer(pid)) { $0.int64(0) }
                if outsiders.isEmpty { break }
                for outsider in outsiders { try log.truncate(pid: pid, aid: outsider, from: 1, frozen: false) }
                try database.execute(
                    "DELETE FROM membership_events WHERE pid = ? AND oid NOT IN (SELECT oid FROM ops WHERE pid = ?)", .integer(pid), .integer(pid))
            }
        }
        carrier.forgetStoredBytes(pid: pid)
        try views.rebuildViews(record)
    }

    /// Applies a fork proof received from a peer. Returns false if it changed nothing.
    @discardableResult
    public func apply(_ proof: ForkProof) throws -> Bool {
        try database.transaction(.immediate) {
            guard let record = try log.partition(proof.partition) else { return false }
            let aid = try log.authorID(proof.author)
            if let frozen = try log.head(pid: record.pid, aid: aid).frozenAt, frozen <= proof.seq { return false }
            try recordFork(proof, record: record, aid: aid)
            try views.flushPendingRebuilds()
            return true
        }
    }
}
