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

/// One author's chain frozen by a fork in one partition, as `doctor`, `status` and `people` show it.
///
/// The proof's table keeps no time of its own (`fork_proofs`), so none is shown.
public struct ForkedChain: Sendable, Equatable {
    public var partition: PartitionID
    public var kind: PartitionKind
    /// A name for people: `#lobby`, the conversation's name, `directory`, `own data`...
    public var name: String
    /// The key that signed the two ops.
    public var author: UserID
    /// Whose key it is: the person when `author` is a certified device, else `author` itself.
    public var person: UserID
    /// Where the chain forked; the author's ops from here on are excluded.
    public var seq: UInt64

    public init(partition: PartitionID, kind: PartitionKind, name: String, author: UserID, person: UserID, seq: UInt64) {
        (self.partition, self.kind, self.name, self.author, self.person, self.seq) = (partition, kind, name, author, person, seq)
    }
}

extension Forks {
    /// Every forked chain held here, by partition id, then author key: the same order on every
    /// replica that holds the same proofs. Read-only.
    public func chains() throws -> [ForkedChain] {
        try database.prepare(
            """
            SELECT p.descriptor, c.name, r.name, a.key, coalesce(pa.key, a.key), f.seq
            FROM fork_proofs f JOIN partitions p ON p.pid = f.pid JOIN authors a ON a.aid = f.aid
            LEFT JOIN conversations c ON c.pid = f.pid LEFT JOIN private_rooms r ON r.pid = f.pid
            LEFT JOIN devices d ON d.device_aid = f.aid LEFT JOIN authors pa ON pa.aid = d.person_aid
            ORDER BY p.id, a.key, f.seq
            """
        ).rows { row in
            let descriptor = try PartitionDescriptor(decoding: row.blob(0))
            let author = UserID(publicKey: row.blob(3))!
            return ForkedChain(
                partition: descriptor.id, kind: descriptor.kind,
                name: Self.name(of: descriptor, conversation: row.isNull(1) ? nil : row.text(1), privateRoom: row.isNull(2) ? nil : row.text(2)),
                author: author, person: UserID(publicKey: row.blob(4)) ?? author, seq: UInt64(row.int64(5)))
        }
    }

    private static func name(of descriptor: PartitionDescriptor, conversation: String?, privateRoom: String?) -> String {
        switch descriptor {
        case .conversation: conversation.flatMap { $0.isEmpty ? nil : $0 } ?? descriptor.displayName
        case .privateRoom: privateRoom.map { "#\($0) (private)" } ?? descriptor.displayName
        case .ownData: "own data"
        default: descriptor.displayName
        }
    }
}
